"""RISC-V (issue 20): the emulated RV32IMAC board rv32-virt under QEMU (all five examples verified
against PyTorch in fp32 and bit-exact in int8, exact instruction counts, exit codes), the RP2350's
Hazard3 build rp2350-riscv checked statically (IMAGE_DEF, entry, UF2 family, sections, its offline
PlatformIO build), and the Zba/Zbb instructions GCC 12 emits in the int8 kernels."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from mcu_gen.firmware import uf2
from mcu_gen.firmware.stack import static_reserve
from mcu_gen.boards import get_board
from mcu_gen.paths import EXAMPLES

RV_TOOLS = ("riscv64-unknown-elf-gcc", "qemu-system-riscv32", "cmake")
_missing = [t for t in RV_TOOLS if shutil.which(t) is None]
needs_rv = pytest.mark.skipif(bool(_missing), reason=f"missing {', '.join(_missing)}: run scripts/setup.sh "
                              "(gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc)")

MNIST = EXAMPLES / "mnist" / "model.py"
EXAMPLE_NAMES = ["mnist", "kws_dscnn", "ad_autoencoder", "ic_resnet8", "vww_mobilenet"]
FLASH, FLASH_SIZE = 0x10000000, 4 << 20
RAM, RAM_SIZE = 0x20000000, 520 << 10
RP2350_RISCV = 0xE48BFF5A


def nm(elf) -> dict:
    out = subprocess.run(["riscv64-unknown-elf-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3}


def objdump(elf) -> str:
    return subprocess.run(["riscv64-unknown-elf-objdump", "-d", "--no-show-raw-insn", str(elf)],
                          capture_output=True, text=True, check=True).stdout


def functions(dis: str) -> dict:
    """function name -> its mnemonics, from `objdump -d`."""
    out, name = {}, None
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name and "\t" in line:
            parts = line.split("\t")
            if len(parts) >= 2 and parts[1].strip():
                out[name].append(parts[1].split()[0])
    return out


def check_rp2350_riscv_image(image: dict, symbols: dict) -> None:
    """image: page address -> bytes. The boot ROM's view: an IMAGE_DEF for a RISC-V executable in the
    first 4 KiB whose ENTRY_POINT is _start (the first word of flash) and whose SP is the top of SRAM."""
    assert min(image) == FLASH, f"the image starts at 0x{min(image):08x}, not at the start of flash"
    for addr in image:
        assert FLASH <= addr and addr + uf2.PAGE_SIZE <= FLASH + FLASH_SIZE
    flat = b"".join(image[a] for a in sorted(image) if a < FLASH + 4096)
    entry, sp = symbols["_start"], symbols["__StackTop"]
    assert entry == FLASH, "_start must be the first instruction (the boot ROM's default RISC-V entry)"
    assert sp == RAM + RAM_SIZE
    block = struct.pack("<8I", 0xFFFFDED3, 0x11010142, 0x00000344, entry, sp, 0x000004FF, 0, 0xAB123579)
    offsets = [i for i in range(0, 4096 - len(block) + 1, 4) if flat[i : i + len(block)] == block]
    assert offsets == [symbols["__picobin_block"] - FLASH], "exactly one RISC-V IMAGE_DEF in the first 4 KiB"
    # Flags 0x1101: EXE (bit 0), CPU RISCV (bits 10:8 = 1), CHIP RP2350 (bits 14:12 = 1); no Arm IMAGE_DEF.
    assert struct.pack("<I", 0x10210142) not in flat
    # The first instructions: gp and sp set up, mtvec written (auipc = opcode 0x17, csrw mtvec = 0x30529073).
    first = struct.unpack_from("<I", flat, 0)[0]
    assert first & 0x7F == 0x17, f"first word 0x{first:08x} is not an auipc"
    assert struct.pack("<I", 0x30529073) in flat[:64]


def test_board_definitions():
    v, p = get_board("rv32-virt"), get_board("rp2350-riscv")
    for b in (v, p):
        assert b.toolchain == "riscv64-unknown-elf" and b.tool("gcc") == "riscv64-unknown-elf-gcc"
        assert not b.fpu and not b.link_cxx and "-mabi=ilp32" in b.cflags
        assert any(f.startswith("-march=rv32imac_") and "zba_zbb" in f for f in b.cflags)
        # The link names the multilib Debian has (rv32imac/ilp32), not the Zb* -march.
        assert b.link_flags == ("-march=rv32imac", "-mabi=ilp32") and b.link_libs == ("--specs=picolibc.specs",)
    assert v.is_qemu and v.emulator.binary == "qemu-system-riscv32" and v.emulator.machine == "virt"
    assert v.emulator.icount_shift == 0 and v.ticks_unit == "instructions" and v.ticks_per_instruction == 1
    assert "zba=true,zbb=true" in " ".join(v.emulator.extra_args) and "-bios" in v.emulator.extra_args
    assert (p.flash.base, p.flash.size, p.ram.base, p.ram.size) == (FLASH, FLASH_SIZE, RAM, RAM_SIZE)
    assert p.uf2_family == uf2.RP2350_RISCV == RP2350_RISCV and p.ticks_unit == "cycles"
    assert p.clock_hz == 150_000_000 and not p.is_qemu
    # The Arm boards keep arm-none-eabi, their cflags for the link and newlib-nano.
    a = get_board("rp2350")
    assert a.toolchain == "arm-none-eabi" and a.link_flags == a.cflags and a.link_cxx
    assert a.link_libs == ("--specs=nano.specs", "--specs=nosys.specs")


@pytest.fixture(scope="module")
def rp_int8(tmp_path_factory):
    if _missing:
        pytest.skip(f"missing {', '.join(_missing)}")
    from mcu_gen.firmware.builder import build

    return build(MNIST, board="rp2350-riscv", quantize="int8", out=tmp_path_factory.mktemp("rprv") / "mnist")


@needs_rv
def test_rp2350_riscv_uf2_and_image_pass_static_checks(rp_int8):
    elf, uf2_path = rp_int8.out / "firmware.elf", rp_int8.out / "firmware.uf2"
    blocks = uf2.parse_uf2(uf2_path.read_bytes())
    assert {b.family for b in blocks} == {RP2350_RISCV}
    image = uf2.uf2_image(blocks)
    assert image == uf2.image_pages(uf2.load_segments(elf.read_bytes()))
    symbols = nm(elf)
    check_rp2350_riscv_image(image, symbols)
    hdr = subprocess.run(["riscv64-unknown-elf-readelf", "-h", str(elf)], capture_output=True, text=True).stdout
    assert "RISC-V" in hdr and "soft-float ABI" in hdr and "ELF32" in hdr
    # The embedded program is in flash, 16-byte aligned, identical to model.pte.
    pte_addr = symbols["mcu_model_pte"]
    flat = b"".join(image[a] for a in sorted(image))
    assert pte_addr % 16 == 0
    assert flat[pte_addr - FLASH : pte_addr - FLASH + len(rp_int8.pte_bytes)] == rp_int8.pte_bytes
    # Sections in flash or SRAM; the stack the board reserves.
    out = subprocess.run(["riscv64-unknown-elf-size", "-A", "-d", str(elf)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[0].startswith(".") and p[1].isdigit() and int(p[1]) and int(p[2]):
            size, addr = int(p[1]), int(p[2])
            in_flash = FLASH <= addr and addr + size <= FLASH + FLASH_SIZE
            assert in_flash or (RAM <= addr and addr + size <= RAM + RAM_SIZE), p
    # The stack: the static bound of the image's code (from _start through main) plus its margin.
    st = rp_int8.report["stack"]
    assert 0 < st["static_bound_bytes"] and [p.split(" (")[0] for p in st["deepest_path"][:3]] == [
        "_start", "mcu_riscv_start", "main"]
    assert rp_int8.report["sections"][".stack"] == static_reserve(st["static_bound_bytes"]) < \
        get_board("rp2350-riscv").stack_bytes
    # The PAL: mcycle for ticks, the watchdog for the reset on exit, no Arm instruction anywhere.
    dis = objdump(elf)
    assert re.search(r"csrr\s+\w+,\s*mcycle\b", dis) and re.search(r"csrr\s+\w+,\s*mcycleh\b", dis)
    assert re.search(r"csrw\s+mcountinhibit", dis)
    assert "SysTick_Handler" not in symbols and "Reset_Handler" not in symbols
    # mcu_pal_exit: drain UART0 (0x40070000), then PSM WDSEL (set alias 0x4001a008) and WATCHDOG CTRL.TRIGGER
    # (set alias 0x400da000): a chip reset through the watchdog.
    body = dis.split("<mcu_pal_exit>:", 1)[1].split("\n\n", 1)[0]
    for page in ("0x40070", "0x4001a", "0x400da"):
        assert re.search(rf"lui\s+\w+,{page}\b", body), page
    # The clocks and UART setup are the Arm board's: XOSC, PLL_SYS, CLOCKS, UART0.
    for page in ("0x40048", "0x40050", "0x40010", "0x40070"):
        assert re.search(rf"lui\s+\w+,{page}\b", dis), page


@needs_rv
def test_rp2350_riscv_image_checks_catch_bad_images(rp_int8):
    """The static checks can fail: an Arm IMAGE_DEF, a wrong entry point, a missing block."""
    elf = rp_int8.out / "firmware.elf"
    symbols = nm(elf)
    good = uf2.uf2_image(uf2.parse_uf2((rp_int8.out / "firmware.uf2").read_bytes()))
    off = symbols["__picobin_block"] - FLASH

    def patched(word_index, value):
        image = dict(good)
        page = bytearray(image[FLASH])
        struct.pack_into("<I", page, off + 4 * word_index, value)
        image[FLASH] = bytes(page)
        return image

    check_rp2350_riscv_image(good, symbols)
    for word, value in ((1, 0x10210142), (3, FLASH + 4), (4, RAM + RAM_SIZE - 16), (0, 0)):
        with pytest.raises(AssertionError):
            check_rp2350_riscv_image(patched(word, value), symbols)
    # An Arm UF2 family id is caught by the family check of the build test.
    arm = uf2.parse_uf2(uf2.elf_to_uf2(elf.read_bytes(), uf2.RP2350_ARM_S))
    assert {b.family for b in arm} != {RP2350_RISCV}


@needs_rv
def test_rp2350_riscv_platformio_project_builds_offline(rp_int8, tmp_path_factory):
    try:
        import platformio  # noqa: F401
    except ImportError:
        pytest.skip("PlatformIO is not installed (pip install -e '.[pio]')")
    from mcu_gen.firmware import platformio_setup as pio

    core = pio.ensure_tool_scons(tmp_path_factory.mktemp("pio-core"))
    board_json = (rp_int8.out / "firmware" / "pio_platform" / "boards" / "rp2350_riscv.json").read_text()
    assert '"toolchain": "riscv64-unknown-elf"' in board_json and '"link_cxx": false' in board_json
    elf = pio.build_offline(rp_int8.out / "firmware", core)
    assert elf.name == "firmware.elf" and elf.parent.name == "rp2350_riscv"
    image = uf2.uf2_image(uf2.parse_uf2(uf2.elf_to_uf2(elf.read_bytes(), RP2350_RISCV)))
    check_rp2350_riscv_image(image, nm(elf))


@needs_rv
def test_int8_kernels_use_zba_zbb(rp_int8):
    """GCC 12 emits Zba (shNadd) and Zbb (min/max, ...) in the portable int8 kernels' inner loops."""
    funcs = functions(objdump(rp_int8.out / "firmware.elf"))
    kernels = {n: m for n, m in funcs.items() if n.startswith("_ZN3mcu7kernels")}
    assert kernels
    used = {op for m in kernels.values() for op in m}
    assert used & {"sh1add", "sh2add", "sh3add"}, "no Zba instruction in the kernels"
    assert used & {"min", "max", "minu", "maxu"}, "no Zbb min/max in the kernels"
    # No floating-point instruction: the Hazard3 has no FPU (soft-float ABI, f/d disabled in QEMU too).
    all_ops = {op for m in funcs.values() for op in m}
    assert not {op for op in all_ops if re.fullmatch(r"f(add|mul|madd|sub|div|lw|sw|mv)\.?.*", op)}


@pytest.mark.qemu
@needs_rv
def test_rv32_virt_ticks_are_instructions_and_exit_codes(tmp_path):
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.device.runner import run

    r = run(MNIST, board="rv32-virt", out=tmp_path / "m", n_random=1)
    assert r.verified and r.instructions_per_inference > 1_000_000
    b = get_board("rv32-virt")
    for code in (0, 7):
        s = QemuSession(b, tmp_path / "m" / "firmware.elf")
        try:
            link = s.start()
            link.hello()
            # SPIN: an addi/bnez loop of exactly 2n instructions between two minstret reads.
            counts = {n: b.instructions_from_ticks(link.spin(n)) for n in (0, 1000, 100_000)}
            assert counts[100_000] - counts[1000] == 2 * (100_000 - 1000)
            assert counts[1000] - counts[0] == 2000 and 0 < counts[0] < 64
            assert s.exit(code) == code  # the SiFive test finisher passes the code to QEMU's exit status
        finally:
            s.close()


@pytest.mark.qemu
@needs_rv
@pytest.mark.parametrize("quantize", [None, "int8"], ids=["fp32", "int8"])
@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_rv32_virt_examples_verified(example, quantize, tmp_path):
    """Every example on the emulated RV32 board: fp32 against PyTorch, int8 bit-exact with the host
    integer reference (portable int8 kernels, compiled with Zba/Zbb)."""
    from mcu_gen.device.runner import run

    r = run(EXAMPLES / example / "model.py", board="rv32-virt", out=tmp_path / example, quantize=quantize,
            max_inputs=2, timeout=300.0)
    assert r.verified, r
    assert r.n_inferences == 2 and r.instructions_per_inference > 100_000
    if quantize:
        assert r.bit_exact is True
    else:
        assert r.max_abs_error <= r.tolerance


@pytest.mark.qemu
@needs_rv
def test_rv32_virt_platformio_build_and_pio_test(tmp_path):
    """The offline PlatformIO project builds with the RISC-V toolchain and `pio test` runs it under QEMU."""
    try:
        import platformio  # noqa: F401
    except ImportError:
        pytest.skip("PlatformIO is not installed (pip install -e '.[pio]')")
    from mcu_gen.firmware import platformio_setup as pio
    from mcu_gen.firmware.builder import build

    core = pio.ensure_tool_scons(tmp_path / "pio-core")
    r = build(MNIST, board="rv32-virt", out=tmp_path / "m", compile=False)
    project = r.out / "firmware"
    ini = (project / "platformio.ini").read_text()
    assert "qemu-system-riscv32" in ini and "rv32,f=false" in ini
    elf = pio.build_offline(project, core)
    assert "RISC-V" in subprocess.run(["riscv64-unknown-elf-readelf", "-h", str(elf)], capture_output=True,
                                      text=True).stdout
    out = pio.run_pio(["test", "-e", "rv32_virt_test"], project, core).stdout
    for case in ("program_loads", "matches_reference_0", "matches_reference_1"):
        assert f"TEST {case} PASS" in out
    assert "3 test cases: 3 succeeded" in out
