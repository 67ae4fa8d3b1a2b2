"""The static stack bound (mcu_gen/firmware/stack_bound.py) on images the real cross-compilers make: frames,
direct, tail and indirect calls, exception handlers, and what it refuses to bound (recursion, alloca).
Every example run on QEMU checks the bound against the device's measured high-water mark as well
(device/runner.py raises when the device used more); tests/test_total_ram.py checks the reservation."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mcu_gen.boards import get_board
from mcu_gen.firmware.stack import static_reserve
from mcu_gen.firmware.stack_bound import _arm_stack_down, _riscv_stack_down, stack_bound

ARM = get_board("mps2-an505")
M4 = get_board("mps2-an386")
RV = get_board("rv32-virt")

# One leaf with a 400-byte frame, reached only through a table of function pointers (an indirect call),
# a tail call, and a vector table with one exception handler that has a 200-byte frame.
PROGRAM = r"""
volatile int sink;
__attribute__((noinline)) void leaf(int i) { volatile char b[400]; b[i] = 1; sink = b[i & 3]; }
__attribute__((noinline)) void small(int i) { volatile char b[16]; b[i] = 2; sink = b[0]; }
void (*const table[])(int) = {leaf, small};
__attribute__((noinline)) void mid(int i) { volatile char b[100]; b[i] = 3; table[sink & 1](b[0]); sink = b[1]; }
__attribute__((noinline)) void tail(int i) { small(i + 1); }
void Handler(void) { volatile char b[200]; b[0] = 1; sink = b[0]; }
__attribute__((noinline)) int main(void) { mid(sink); tail(sink); return 0; }
void Reset_Handler(void) { main(); for (;;) {} }
__attribute__((used, section(".vectors"))) void (*const __vectors[])(void) = {0, Reset_Handler, Handler};
"""
RECURSIVE = r"""
volatile int sink;
__attribute__((noinline)) int walk(int n) { volatile int b[4]; b[0] = n; return n > 1 ? walk(n - 1) * b[0] + walk(n - 2) : n; }
__attribute__((noinline)) int main(void) { return walk(sink); }
void Reset_Handler(void) { sink = main(); for (;;) {} }
"""
ALLOCA = r"""
volatile int sink;
__attribute__((noinline)) void var(int n) { volatile char b[n]; b[0] = 1; sink = b[0]; }
__attribute__((noinline)) int main(void) { var(sink); return 0; }
void Reset_Handler(void) { main(); for (;;) {} }
"""


def compile_image(tmp_path: Path, board, source: str, extra=()) -> Path:
    gcc = shutil.which(board.tool("gcc"))
    if gcc is None:
        pytest.skip(f"{board.tool('gcc')} is not installed (scripts/setup.sh --apt-only)")
    src = tmp_path / "image.c"
    src.write_text(source)
    elf = tmp_path / f"{board.name}.elf"
    entry = "Reset_Handler"
    flags = list(board.cflags) if board.toolchain.startswith("arm") else ["-march=rv32imac", "-mabi=ilp32"]
    subprocess.run([gcc, *flags, "-Os", "-nostdlib", "-nostartfiles", f"-Wl,-e,{entry}", *extra, "-o", str(elf),
                    str(src)], check=True, capture_output=True, text=True)
    return elf


@pytest.mark.parametrize("board", [ARM, M4, RV], ids=lambda b: b.name)
def test_bound_follows_frames_indirect_and_tail_calls_and_handlers(tmp_path, board):
    r = stack_bound(compile_image(tmp_path, board, PROGRAM), board)
    assert r.reason is None and r.bytes is not None
    names = [n for n, _ in r.path]
    # The deepest path runs through the indirect call to the 400-byte leaf, not the direct call to `small`.
    assert names[:2] == ["Reset_Handler", "main"] and names[-2:] == ["mid", "leaf"], r.path
    frames = dict(r.path)
    assert 400 <= frames["leaf"] <= 440 and 100 <= frames["mid"] <= 140
    assert r.indirect_targets == 2  # leaf and small, through the table; the handler is not one
    if board is RV:  # a RISC-V handler saves what it uses in its own frame: no frame stacked by the core
        assert 200 <= r.handler_bytes <= 240
    else:  # one exception: the handler's 200-byte frame and the frame the core stacks (with FP state: 104 B)
        assert 200 + (104 if board.fpu else 32) <= r.handler_bytes <= 240 + 104
        assert r.handler_bytes >= 200 + 104
    assert r.bytes == sum(frames.values()) + r.handler_bytes


@pytest.mark.parametrize("board", [ARM, RV], ids=lambda b: b.name)
def test_branch_targets_are_resolved_by_address_not_by_objdumps_name(tmp_path, board):
    """objdump names a branch target after the nearest symbol, an absolute one too: the linker script's __stack_size
    (0x10000) fell inside a kernel of a 160 KB Cortex-M4 image, whose branches then read as calls to `__stack_size`:
    no bound ("a call to __stack_size, which the disassembly does not show"), the stack measured instead, 128 B more
    RAM than its library build (bench/sweep_random_cnn.py --seed 30 --boards mps2-an386 --ram). The same image with
    an absolute symbol at a branch target inside the reset handler (its endless loop) has the same bound."""
    plain = stack_bound(compile_image(tmp_path, board, PROGRAM), board)
    objdump = shutil.which(board.tool("objdump"))
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(tmp_path / f"{board.name}.elf")],
                          capture_output=True, text=True, check=True).stdout
    inside = re.findall(r"\s([0-9a-f]+) <Reset_Handler\+0x[0-9a-f]+>", text)  # its `for (;;) {}`
    assert inside, "no branch inside Reset_Handler"
    (tmp_path / "marked").mkdir()
    elf = compile_image(tmp_path / "marked", board, PROGRAM, extra=[f"-Wl,--defsym,__stack_size=0x{inside[0]}"])
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(elf)], capture_output=True, text=True,
                          check=True).stdout
    assert "<__stack_size>" in text  # the premise: objdump names the target after the absolute symbol
    marked = stack_bound(elf, board)
    assert marked.reason is None and marked.bytes == plain.bytes and marked.path == plain.path, marked.reason


NO_MAIN = r"""
volatile int sink;
void Reset_Handler(void) { for (;;) { sink = 1; } }
"""


@pytest.mark.parametrize("source,why", [(RECURSIVE, "recursion through walk"),
                                        (ALLOCA, "var moves the stack pointer by a register amount"),
                                        (NO_MAIN, "Reset_Handler's calls do not reach main")])
@pytest.mark.parametrize("board", [ARM, RV], ids=lambda b: b.name)
def test_what_cannot_be_bounded_says_why(tmp_path, board, source, why):
    r = stack_bound(compile_image(tmp_path, board, source), board)
    assert r.bytes is None and why in r.reason, r.reason
    assert r.as_report()["static_bound_bytes"] is None


def test_instruction_forms_that_move_the_stack_pointer():
    assert _arm_stack_down("push", "{r4, r5, r6, lr}") == 16
    assert _arm_stack_down("stmdb", "sp!, {r4, r5, r6, r7, r8, r9, sl, fp, lr}") == 36
    assert _arm_stack_down("vpush", "{d8-d15}") == 64
    assert _arm_stack_down("vpush", "{s16-s19}") == 16
    assert _arm_stack_down("sub", "sp, #508") == 508
    assert _arm_stack_down("sub.w", "sp, sp, #1024") == 1024
    assert _arm_stack_down("subw", "sp, sp, #2052") == 2052
    assert _arm_stack_down("str.w", "lr, [sp, #-4]!") == 4
    assert _arm_stack_down("strd", "r4, r5, [sp, #-8]!") == 8
    assert _arm_stack_down("vstrw.32", "q4, [sp, #-16]!") == 16
    assert _arm_stack_down("sub", "sp, sp, r3") is None  # alloca
    assert _arm_stack_down("str", "r3, [sp, #4]") == 0 and _arm_stack_down("add", "sp, #16") == 0
    assert _arm_stack_down("sub.w", "ip, sp, #8") == 0
    assert _riscv_stack_down("addi", "sp,sp,-48") == 48 and _riscv_stack_down("add", "sp,sp,-96") == 96
    assert _riscv_stack_down("addi", "sp,sp,48") == 0
    assert _riscv_stack_down("sub", "sp,sp,a5") is None


def test_reservation_rule():
    assert static_reserve(0) == 0
    assert static_reserve(1144) == 1216  # 1144 + 72 = 1216
    assert all(static_reserve(n) % 64 == 0 and static_reserve(n) >= n + n / 16 for n in range(0, 5000, 37))
