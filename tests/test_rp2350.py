"""Raspberry Pi Pico 2 (RP2350) bare-metal builds, checked statically (no RP2350 emulator exists):
IMAGE_DEF in the first 4 KiB, vector table, memory limits, hard float, UF2 blocks, fit errors."""
import struct
import subprocess

import pytest

from mcu_gen.firmware import uf2
from mcu_gen.firmware.stack import static_reserve
from mcu_gen.boards import get_board
from mcu_gen.errors import BuildError
from mcu_gen.firmware.builder import build
from mcu_gen.paths import EXAMPLES

FLASH, FLASH_SIZE = 0x10000000, 4 << 20
RAM, RAM_SIZE = 0x20000000, 520 << 10
IMAGE_DEF = struct.pack("<5I", 0xFFFFDED3, 0x10210142, 0x000001FF, 0x00000000, 0xAB123579)


def check_rp2350_image(image: dict, symbols: dict) -> None:
    """image: page address -> bytes (what lands in flash). Raises AssertionError on any problem."""
    first = min(image)
    assert first == FLASH, f"the image starts at 0x{first:08x}, not at the start of flash"
    flat = b"".join(image[a] for a in sorted(image) if a < FLASH + 4096)
    sp, reset = struct.unpack_from("<II", flat, 0)
    assert RAM < sp <= RAM + RAM_SIZE and sp % 8 == 0, f"initial SP 0x{sp:08x}"
    assert reset & 1, "reset vector must be a Thumb address (bit 0 set)"
    assert FLASH <= reset < FLASH + FLASH_SIZE and reset & ~1 == symbols["Reset_Handler"]
    offsets = [i for i in range(0, 4096 - len(IMAGE_DEF) + 1, 4) if flat[i : i + len(IMAGE_DEF)] == IMAGE_DEF]
    assert len(offsets) == 1, "exactly one IMAGE_DEF block in the first 4 KiB"
    for addr in image:
        assert FLASH <= addr and addr + uf2.PAGE_SIZE <= FLASH + FLASH_SIZE


def nm(elf) -> dict:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3}


def sections(elf) -> dict:
    out = subprocess.run(["arm-none-eabi-size", "-A", "-d", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    return {p[0]: (int(p[1]), int(p[2])) for p in (l.split() for l in out.splitlines())
            if len(p) == 3 and p[0].startswith(".") and p[1].isdigit()}


@pytest.fixture(scope="module")
def mnist(tmp_path_factory, qemu_tools):
    return build(EXAMPLES / "mnist" / "model.py", board="rp2350", out=tmp_path_factory.mktemp("rp2350") / "mnist")


def test_board_definition():
    b = get_board("rp2350")
    assert (b.core, b.fpu, b.dsp, b.clock_hz) == ("cortex-m33", True, True, 150_000_000)
    assert (b.flash.base, b.flash.size, b.ram.base, b.ram.size) == (FLASH, FLASH_SIZE, RAM, RAM_SIZE)
    assert b.emulator.kind == "none" and b.ticks_unit == "cycles" and b.baud == 115200
    assert b.flash_method == "uf2" and b.uf2_family == uf2.RP2350_ARM_S == 0xE48BFF59
    assert b.frameworks == ["baremetal", "arduino"] and b.platformio["arduino"]["board"] == "rpipico2"


def test_build_writes_elf_and_uf2_that_pass_static_checks(mnist):
    elf, uf2_path = mnist.out / "firmware.elf", mnist.out / "firmware.uf2"
    assert elf.is_file() and uf2_path.is_file()
    blocks = uf2.parse_uf2(uf2_path.read_bytes())
    assert {b.family for b in blocks} == {0xE48BFF59}
    image = uf2.uf2_image(blocks)
    symbols = nm(elf)
    check_rp2350_image(image, symbols)
    # The UF2 holds exactly the ELF's loadable bytes (0xFF between segments).
    assert image == uf2.image_pages(uf2.load_segments(elf.read_bytes()))
    assert symbols["__vectors"] == FLASH and FLASH < symbols["__picobin_block"] < FLASH + 4096
    # The embedded program is in flash, 16-byte aligned, and identical to model.pte.
    pte_addr = symbols["mcu_model_pte"]
    assert pte_addr % 16 == 0
    flat = b"".join(image[a] for a in sorted(image))
    assert flat[pte_addr - FLASH : pte_addr - FLASH + len(mnist.pte_bytes)] == mnist.pte_bytes


def test_sections_within_flash_and_sram(mnist):
    for name, (size, addr) in sections(mnist.out / "firmware.elf").items():
        if size == 0 or addr == 0:
            continue
        in_flash = FLASH <= addr and addr + size <= FLASH + FLASH_SIZE
        in_ram = RAM <= addr and addr + size <= RAM + RAM_SIZE
        assert in_flash or in_ram, f"{name} at 0x{addr:08x} (+{size}) is outside flash and SRAM"
    rep = mnist.report
    assert 0 < rep["flash_bytes"] <= FLASH_SIZE and rep["arena_bytes"] < rep["ram_bytes"] <= RAM_SIZE
    # The stack: the static bound of the image's code plus its margin, not the linker script's 32 KiB.
    bound = rep["stack"]["static_bound_bytes"]
    assert 0 < bound and rep["sections"][".stack"] == static_reserve(bound) < get_board("rp2350").stack_bytes
    assert [p.split(" (")[0] for p in rep["stack"]["deepest_path"][:2]] == ["Reset_Handler", "main"]


def test_hard_float_cortex_m33_and_peripherals(mnist):
    elf = mnist.out / "firmware.elf"
    attrs = subprocess.run(["arm-none-eabi-readelf", "-A", "-h", str(elf)], capture_output=True, text=True).stdout
    assert "hard-float ABI" in attrs and "Tag_ABI_VFP_args: VFP registers" in attrs
    assert "Tag_CPU_arch: v8-M.mainline" in attrs
    dis = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True).stdout
    # The PAL's literal pools name UART0, XOSC, PLL_SYS and CLOCKS, and RESETS (its atomic clear
    # alias 0x40023000, or its base when the compiler folds the alias offset into the access).
    assert ".word\t0x40023000" in dis or ".word\t0x40020000" in dis
    for addr in ("40070000", "40048000", "40050000", "40010000"):
        assert f".word\t0x{addr}" in dis, addr


def test_uf2_rejects_malformed_blocks(mnist):
    data = bytearray((mnist.out / "firmware.uf2").read_bytes())
    assert len(data) % 512 == 0 and len(uf2.parse_uf2(bytes(data))) == len(data) // 512
    with pytest.raises(uf2.Uf2Error, match="not a positive multiple of 512"):
        uf2.parse_uf2(bytes(data[:-1]))
    bad = bytearray(data)
    bad[0] ^= 1
    with pytest.raises(uf2.Uf2Error, match="block 0: bad magic"):
        uf2.parse_uf2(bytes(bad))
    bad = bytearray(data)
    struct.pack_into("<I", bad, 512 + 20, 7)  # block 1 claims number 7
    with pytest.raises(uf2.Uf2Error, match="block 1: numbered 7"):
        uf2.parse_uf2(bytes(bad))
    with pytest.raises(uf2.Uf2Error, match="not a 32-bit little-endian ELF"):
        uf2.elf_to_uf2(b"not an elf")


def test_uf2_pages_pad_with_erased_flash():
    pages = uf2.image_pages([(0x10000004, b"\x01\x02"), (0x100001FE, b"\x03\x04\x05")])
    assert sorted(pages) == [0x10000000, 0x10000100, 0x10000200]
    assert pages[0x10000000][:8] == b"\xff" * 4 + b"\x01\x02\xff\xff"
    assert pages[0x10000100][-2:] == b"\x03\x04" and pages[0x10000200][:2] == b"\x05\xff"


def test_model_too_big_fails_with_numbers(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(
        "import torch\n"
        "def model():\n    return torch.nn.Sequential(torch.nn.Linear(1024, 1100)).eval()\n"
        "def example_inputs():\n    return (torch.randn(1, 1024),)\n")
    with pytest.raises(BuildError, match=r"does not fit rp2350: flash: needs [\d,]+ bytes, the board has 4,194,304"):
        build(big, board="rp2350", out=tmp_path / "out", compile=False)
    wide = tmp_path / "wide.py"
    wide.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x) + 1.0\n"
        "def model():\n    return M().eval()\n"
        "def example_inputs():\n    return (torch.randn(1, 140000),)\n")
    with pytest.raises(BuildError, match=r"does not fit rp2350: RAM: needs [\d,]+ bytes, the board has 532,480"):
        build(wide, board="rp2350", out=tmp_path / "out2", compile=False)
