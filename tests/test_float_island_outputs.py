"""Float outputs of an int8 program's fp32 islands, compared with the host integer reference on QEMU.

An outside model (tests/models_user/masked_tokens.py) ran MISMATCH with --quantize int8: its LayerNorm kernel was
compiled with GCC's default fp-contract=fast (VFMA on the M33: its sum of squares rounded once where the host's
emulation rounds twice, 1 ulp apart), and the host computed its einsum's bmm with PyTorch's own summation order.
The kernels an island's emulation reproduces are now compiled without fp-contract, and mm/bmm are emulated in the
kernel's order (fp32_emulation._emulated_matmul). What a 1-ulp libm difference can still move is held to the fp32
tolerance: test_recurrent.py.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.reference import fp32_emulation

MODEL = "tests/models_user/masked_tokens.py"


@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
def test_int8_program_with_float_island_outputs_is_bit_exact(qemu_tools, tmp_path, board):
    r = mcu_gen.run(MODEL, board=board, quantize="int8", out=tmp_path, max_inputs=2)
    assert r.bit_exact is True and r.verified
    assert [np.asarray(o).dtype for o in r.outputs[0]] == [np.float32, np.int64, np.float32]


def test_matmul_emulation_is_the_kernels_order():
    """f32_matrix.h matmul_f32 sums a[r, t] * b[t, :] over t in order, each product and sum rounded to float32;
    the emulation does that (for a sum whose order matters: 1e8 + 1 - 1e8 is 0 in that order)."""
    a = np.array([[1e8, 1.0, -1e8]], np.float32)
    b = np.ones((3, 2), np.float32)
    assert np.array_equal(fp32_emulation.matmul_f32(a, b), np.zeros((1, 2), np.float32))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 5, 7)).astype(np.float32), rng.standard_normal((3, 7, 4)).astype(np.float32)
    want = np.zeros((3, 5, 4), np.float32)
    for i in range(3):
        for t in range(7):
            want[i] = want[i] + x[i, :, t:t + 1] * y[i, t:t + 1, :]
    got = np.stack([fp32_emulation.matmul_f32(x[i], y[i]) for i in range(3)])
    assert np.array_equal(got, want)
    assert np.allclose(got, torch.bmm(torch.from_numpy(x), torch.from_numpy(y)).numpy(), atol=1e-5)
