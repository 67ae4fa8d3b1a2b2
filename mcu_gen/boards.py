"""Boards are data: boards/<name>/board.toml plus a few source files.

    board = get_board("mps2-an505")
    board.cflags, board.linker_script_path, board.source_paths
    board.instructions_from_ticks(ticks)   # exact under QEMU -icount
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from mcu_gen.paths import BOARDS
from mcu_gen.errors import McuGenError


class BoardError(McuGenError, ValueError):
    """An unknown board or a malformed board.toml."""


@dataclass(frozen=True)
class MemoryRegion:
    base: int
    size: int


@dataclass(frozen=True)
class RamRegion:
    """One RAM region the memory planner may put an arena in (docs/boards.md, docs/memory_planning.md).

    The main region ([ram]) also holds .data, .bss and the stack; every other one ([ram_regions.NAME])
    holds only its arena, in the linker output section `section`. `speed` ranks the regions: 1 is the
    fastest (a TCM), higher is slower; the planner fills faster regions with the hottest tensors first."""
    name: str
    base: int
    size: int
    speed: int = 1
    section: str = ""  # linker section of this region's arena ("" for the main region: .bss)
    main: bool = False


@dataclass(frozen=True)
class Emulator:
    kind: str  # "qemu", "native" or "none"
    machine: str = ""
    icount_shift: int | None = None
    extra_args: tuple = ()
    binary: str = "qemu-system-arm"  # the QEMU system emulator ([emulator] binary)


# What a bare-metal board links against unless its board.toml says otherwise:
# newlib-nano without OS stubs (arm-none-eabi-gcc).
DEFAULT_TOOLCHAIN = "arm-none-eabi"
DEFAULT_LINK_LIBS = ("--specs=nano.specs", "--specs=nosys.specs")


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    directory: Path
    core: str
    fpu: bool
    dsp: bool
    mve: bool
    npu: bool
    clock_hz: int
    flash: MemoryRegion
    ram: MemoryRegion
    cflags: tuple  # CPU/FPU flags, for the compiler and the linker
    linker_script: str  # file name inside the board directory ("" = none)
    sources: tuple  # startup + PAL sources inside the board directory
    defines: dict = field(default_factory=dict)
    cmsis_nn_variant: str = ""
    emulator: Emulator = Emulator("none")
    ticks_unit: str = "cycles"
    baud: int = 115200
    flash_method: str = "none"
    # Added for real boards (all optional in board.toml, see docs/boards.md):
    build_kind: str = "baremetal"  # "baremetal" (CMake + our startup/PAL) or "pio-only" (PlatformIO project only)
    stack_bytes: int = 0  # stack the linker script reserves in RAM (0: unknown)
    uf2_family: int | None = None  # [flash_method] uf2_family: write firmware.uf2 with this family id
    platformio: dict = field(default_factory=dict)  # framework -> {platform, board, serial, options}
    # The cross toolchain is data too (docs/boards.md): the GNU prefix of its tools, the CPU flags
    # the link needs (multilib selection; default: cflags) and the C library specs of the link.
    toolchain: str = DEFAULT_TOOLCHAIN
    link_cpu_flags: tuple | None = None
    link_libs: tuple = DEFAULT_LINK_LIBS
    link_cxx: bool = True  # link with g++ (libstdc++); false: with gcc, for toolchains without a libstdc++
    # RAM regions besides [ram] ([ram_regions.NAME]), in board order: memory ids 2, 3, ...
    extra_ram: tuple = ()
    ram_name: str = "ram"  # [ram] name
    ram_speed: int = 1  # [ram] speed rank

    @property
    def ram_regions(self) -> tuple:
        """Every RAM region an arena may live in, the main one ([ram], memory id 1) first."""
        main = RamRegion(self.ram_name, self.ram.base, self.ram.size, self.ram_speed, "", True)
        return (main,) + tuple(self.extra_ram)

    @property
    def link_flags(self) -> tuple:
        """CPU flags of the link: `[build] link_cpu_flags`, else the compiler's cflags."""
        return self.cflags if self.link_cpu_flags is None else self.link_cpu_flags

    def tool(self, name: str) -> str:
        """The name of one of the board's cross tools: tool("gcc") -> "arm-none-eabi-gcc"; the machine's own
        (``size``, ``nm``) for the host board, whose firmware is a native executable."""
        return name if self.is_native else f"{self.toolchain}-{name}"

    @property
    def frameworks(self) -> list[str]:
        """Frameworks `mcu-gen build --framework` accepts for this board; the first is the default."""
        own = ["baremetal"] if self.build_kind == "baremetal" else []
        return own + sorted(self.platformio)

    @property
    def linker_script_path(self) -> Path | None:
        return self.directory / self.linker_script if self.linker_script else None

    @property
    def source_paths(self) -> list[Path]:
        return [(self.directory / s).resolve() for s in self.sources]

    @property
    def files(self) -> list[Path]:
        """Every board file a firmware project needs (sources + linker script)."""
        out = self.source_paths
        if self.linker_script:
            out.append(self.linker_script_path)
        return out

    @property
    def is_qemu(self) -> bool:
        return self.emulator.kind == "qemu"

    @property
    def is_native(self) -> bool:
        """The firmware is a process on the build machine (the host board), talking over stdin/stdout."""
        return self.emulator.kind == "native"

    @property
    def runs_here(self) -> bool:
        """`run` can run its firmware on this machine, without hardware: under QEMU or natively."""
        return self.is_qemu or self.is_native

    @property
    def ticks_per_instruction(self) -> Fraction:
        """SysTick ticks per instruction under `-icount shift=N` (exact)."""
        if self.emulator.icount_shift is None:
            raise BoardError(f"board {self.name!r} has no icount emulator: ticks are not instructions")
        return Fraction(2**self.emulator.icount_shift * self.clock_hz, 10**9)

    def instructions_from_ticks(self, ticks: int) -> int:
        """Instructions executed in a span measured as `ticks` SysTick ticks.

        A span of n instructions reads as floor(t0 + n*r) - floor(t0) ticks
        (r = ticks per instruction, t0 the unknown phase), i.e. n*r - 1 < ticks < n*r + 1.
        With r > 2 at most one integer n fits, and this returns it (nearest if none does)."""
        r = self.ticks_per_instruction
        lo, hi = Fraction(ticks - 1) / r, Fraction(ticks + 1) / r
        n = math.floor(lo) + 1
        return n if n < hi else round(Fraction(ticks) / r)


def _region(data: dict, key: str, path: Path) -> MemoryRegion:
    try:
        r = data[key]
        return MemoryRegion(int(r["base"]), int(r["size"]))
    except (KeyError, TypeError, ValueError) as e:
        raise BoardError(f"{path}: [{key}] needs integer 'base' and 'size'") from e


def _ram_regions(data: dict, path: Path) -> tuple:
    """[ram] name/speed and the [ram_regions.NAME] tables (base, size, speed, section)."""
    ram = data.get("ram", {})
    name, speed = ram.get("name", "ram"), ram.get("speed", 1)
    extra = []
    spans = [(name, int(ram.get("base", 0)), int(ram.get("size", 0)))]
    for rname, r in data.get("ram_regions", {}).items():
        try:
            region = RamRegion(rname, int(r["base"]), int(r["size"]), int(r.get("speed", 1)), str(r["section"]))
        except (KeyError, TypeError, ValueError) as e:
            raise BoardError(f"{path}: [ram_regions.{rname}] needs integer 'base', 'size', 'speed' and a "
                             f"'section' (the linker section of its arena)") from e
        extra.append(region)
        spans.append((rname, region.base, region.size))
    if not isinstance(speed, int) or speed < 1 or any(r.speed < 1 or r.size <= 0 for r in extra):
        raise BoardError(f"{path}: a RAM region's speed is a rank >= 1 (1 = fastest) and its size > 0")
    names = [n for n, _, _ in spans]
    if len(set(names)) != len(names):
        raise BoardError(f"{path}: RAM region names must differ: {names}")
    for i, (a, lo, n) in enumerate(spans):
        for b, lo2, n2 in spans[i + 1:]:
            if lo < lo2 + n2 and lo2 < lo + n:
                raise BoardError(f"{path}: RAM regions {a!r} and {b!r} overlap")
    return str(name), int(speed), tuple(extra)


def load_board(path: Path) -> Board:
    """Parses one board.toml."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise BoardError(f"{path}: {e}") from e
    for key in ("name", "core", "clock_hz"):
        if key not in data:
            raise BoardError(f"{path}: missing '{key}'")
    build = data.get("build", {})
    emu = data.get("emulator", {"kind": "none"})
    ram_name, ram_speed, extra_ram = _ram_regions(data, path)
    board = Board(
        name=data["name"],
        description=data.get("description", ""),
        directory=path.parent,
        core=data["core"],
        fpu=bool(data.get("fpu", False)),
        dsp=bool(data.get("dsp", False)),
        mve=bool(data.get("mve", False)),
        npu=bool(data.get("npu", False)),
        clock_hz=int(data["clock_hz"]),
        flash=_region(data, "flash", path),
        ram=_region(data, "ram", path),
        cflags=tuple(build.get("cflags", ())),
        linker_script=build.get("linker_script", ""),
        sources=tuple(build.get("sources", ())),
        defines=dict(build.get("defines", {})),
        cmsis_nn_variant=build.get("cmsis_nn_variant", ""),
        emulator=Emulator(
            kind=emu.get("kind", "none"),
            machine=emu.get("machine", ""),
            icount_shift=emu.get("icount_shift"),
            extra_args=tuple(emu.get("extra_args", ())),
            binary=emu.get("binary", "qemu-system-arm"),
        ),
        ticks_unit=data.get("ticks", {}).get("unit", "cycles"),
        baud=int(data.get("serial", {}).get("baud", 115200)),
        flash_method=data.get("flash_method", {}).get("kind", "none"),
        build_kind=build.get("kind", "baremetal"),
        stack_bytes=int(build.get("stack_bytes", 0)),
        uf2_family=data.get("flash_method", {}).get("uf2_family"),
        platformio={k: dict(v) for k, v in data.get("platformio", {}).items()},
        toolchain=build.get("toolchain", DEFAULT_TOOLCHAIN),
        link_cpu_flags=tuple(build["link_cpu_flags"]) if "link_cpu_flags" in build else None,
        link_libs=tuple(build.get("link_libs", DEFAULT_LINK_LIBS)),
        link_cxx=bool(build.get("link_cxx", True)),
        extra_ram=extra_ram,
        ram_name=ram_name,
        ram_speed=ram_speed,
    )
    if board.build_kind not in ("baremetal", "pio-only"):
        raise BoardError(f"{path}: [build] kind must be 'baremetal' or 'pio-only', not {board.build_kind!r}")
    if board.build_kind == "pio-only" and not board.platformio:
        raise BoardError(f"{path}: a 'pio-only' board needs a [platformio.<framework>] table")
    for fw, cfg in board.platformio.items():
        if not cfg.get("platform") or not cfg.get("board"):
            raise BoardError(f"{path}: [platformio.{fw}] needs 'platform' and 'board'")
    if board.emulator.kind == "qemu" and not board.emulator.machine:
        raise BoardError(f"{path}: [emulator] kind = 'qemu' needs 'machine'")
    for f in board.files:
        if not f.is_file():
            raise BoardError(f"{path}: board file {f.name} does not exist")
    return board


def list_boards(root: Path = BOARDS) -> list[str]:
    """Names of the boards under boards/, sorted."""
    return sorted(p.parent.name for p in Path(root).glob("*/board.toml"))


def get_board(name: str, root: Path = BOARDS) -> Board:
    path = Path(root) / name / "board.toml"
    if not path.is_file():
        known = ", ".join(list_boards(root)) or "(none)"
        raise BoardError(f"unknown board {name!r}; known boards: {known}")
    board = load_board(path)
    if board.name != name:
        raise BoardError(f"{path}: name {board.name!r} does not match its directory {name!r}")
    return board


def c_array_lines(data: bytes, per_line: int = 16) -> list[str]:
    """`data` as C initialiser lines ("0x1c, 0x00, ...,") for templates/firmware/model_pte.c.j2."""
    return [
        " ".join(f"0x{b:02x}," for b in data[i : i + per_line]) for i in range(0, len(data), per_line)
    ]
