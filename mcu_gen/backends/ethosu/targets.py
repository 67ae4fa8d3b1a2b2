"""Ethos-U NPU configurations mcu-gen can compile for, and Vela's defaults for each.

The system configurations and memory modes are those of Vela's bundled ``Arm/vela.ini``, with
the defaults ExecuTorch's Ethos-U backend uses (U55: Shared_Sram, U65: Dedicated_Sram, U85: Sram_Only).
"""
from __future__ import annotations

from dataclasses import dataclass
from mcu_gen.errors import McuGenError


class NpuError(McuGenError, ValueError):
    """An unknown or unusable NPU configuration."""


@dataclass(frozen=True)
class NpuTarget:
    name: str  # Vela's --accelerator-config, e.g. "ethos-u55-128"
    family: str  # "u55", "u65", "u85"
    macs: int
    system_config: str
    memory_mode: str

    @property
    def vela_args(self) -> list[str]:
        return [f"--accelerator-config={self.name}", "--config=Arm/vela.ini", "--output-format=raw",
                f"--system-config={self.system_config}", f"--memory-mode={self.memory_mode}"]


_SYSTEM = {
    "u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    "u85": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
}
_SIZES = {"u55": (32, 64, 128, 256), "u65": (256, 512), "u85": (128, 256, 512, 1024, 2048)}

NPU_NAMES = [f"ethos-{f}-{m}" for f, sizes in _SIZES.items() for m in sizes]
DEFAULT_NPU = "ethos-u55-128"


def get_npu(name: str = DEFAULT_NPU, system_config: str | None = None, memory_mode: str | None = None) -> NpuTarget:
    if name not in NPU_NAMES:
        raise NpuError(f"unknown NPU configuration '{name}'; choose one of: {', '.join(NPU_NAMES)}")
    family = name.split("-")[1]
    sysc, mode = _SYSTEM[family]
    return NpuTarget(name, family, int(name.rsplit("-", 1)[1]), system_config or sysc, memory_mode or mode)
