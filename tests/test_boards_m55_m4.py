"""The Cortex-M55 (mps3-an547) and Cortex-M4F (mps2-an386) boards on QEMU: exact instruction
counts from SysTick under -icount, and the fp32 MNIST example verified against PyTorch."""
from __future__ import annotations

import shutil

import pytest

from mcu_gen.boards import get_board

pytestmark = [pytest.mark.qemu, pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="needs qemu-system-arm and arm-none-eabi-gcc")]

BOARDS = ["mps3-an547", "mps2-an386"]


def test_board_files():
    m55, m4 = get_board("mps3-an547"), get_board("mps2-an386")
    assert (m55.core, m55.mve, m55.cmsis_nn_variant) == ("cortex-m55", True, "mve")
    assert (m4.core, m4.mve, m4.dsp, m4.cmsis_nn_variant) == ("cortex-m4", False, True, "dsp")
    assert "-mcpu=cortex-m55" in m55.cflags and "-mfpu=fpv4-sp-d16" in m4.cflags
    for b in (m55, m4):  # more than 2 ticks per instruction: a tick count stands for one instruction count
        assert b.ticks_per_instruction > 2


@pytest.mark.parametrize("board", BOARDS)
def test_mnist_fp32_verified_and_ticks_are_instructions(board, tmp_path):
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.device.runner import run

    r = run("examples/mnist/model.py", board=board, out=tmp_path / board, n_random=2)
    assert r.verified, r
    b = get_board(board)
    with QemuSession(b, tmp_path / board / "firmware.elf") as link:
        link.hello()
        # SPIN: a subs/bne loop of exactly 2n instructions between two tick reads. The reads
        # add a fixed few dozen instructions (their count depends on the PAL's compiler flags);
        # ticks convert to instructions exactly when the difference is exactly the loop.
        counts = {n: b.instructions_from_ticks(link.spin(n)) for n in (1000, 100_000)}
        assert counts[100_000] - counts[1000] == 2 * (100_000 - 1000)
        assert 0 < counts[1000] - 2 * 1000 < 64
