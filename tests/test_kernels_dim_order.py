"""dim_order_ops::_clone_dim_order.out (ExecuTorch's dim-order clone, e.g. channels-last -> contiguous in
front of a flatten in its int8 Cortex-M programs) on the native host runner, against PyTorch, byte for byte.

Tensors cross the host runner as raw bytes: a channels-last tensor is given / returned in N,H,W,C order.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction, Program

OP = "dim_order_ops::_clone_dim_order.out"
NCHW, NHWC = (0, 1, 2, 3), (0, 2, 3, 1)
RNG = np.random.default_rng(7)


def stored(x: np.ndarray, dim_order) -> np.ndarray:
    """The bytes of logical array x in memory order dim_order, shaped like x (what the runner reads/writes)."""
    return np.ascontiguousarray(x.transpose(dim_order)).reshape(x.shape)


def sample(shape, dtype) -> np.ndarray:
    if dtype == "float32":
        return RNG.standard_normal(shape).astype(np.float32)
    return RNG.integers(-128, 128, shape).astype(dtype)


def clone_program(cases):
    """One program (one native build): a clone per (x, dtype, in_order, out_order, dim_order argument)."""
    p = Program()
    feeds, want = [], []
    for x, dtype, src, dst, arg in cases:
        i = p.add_tensor(x.shape, dtype, dim_order=src)
        p.inputs.append(i)
        feeds.append(stored(x, src))
        o = p.add_tensor(x.shape, dtype, dim_order=dst)
        order = p.add_scalar("none") if arg is None else p.add_scalar("int_list", list(arg))
        p.instructions.append(Instruction(OP, [i, p.add_scalar("bool", False), order, o, o]))
        p.outputs.append(o)
        # PyTorch's own layout conversion gives the expected memory.
        fmt = torch.channels_last if dst == NHWC else torch.contiguous_format
        t = torch.from_numpy(x).contiguous(memory_format=fmt)
        want.append(np.asarray(t.permute(*dst).contiguous().reshape(x.shape)))
    return p, feeds, want


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_clone_dim_order_matches_pytorch(dtype):
    a = sample((1, 16, 5, 5), dtype)  # mnist's last pool output in ExecuTorch's int8 graph
    b = sample((2, 3, 4, 7), dtype)
    c = sample((1, 1, 6, 6), dtype)  # C == 1: both orders are the same memory
    d = sample((3, 5), dtype)
    cases = [
        (a, dtype, NHWC, NCHW, NCHW),  # channels-last -> contiguous
        (b, dtype, NHWC, NCHW, NCHW),
        (b, dtype, NCHW, NHWC, NHWC),  # contiguous -> channels-last
        (b, dtype, NHWC, NHWC, NHWC),  # plain copy
        (c, dtype, NHWC, NCHW, None),  # None: contiguous
        (d, dtype, (0, 1), (0, 1), None),
    ]
    p, feeds, want = clone_program(cases)
    got = run_on_host(p, feeds)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, k
        assert g.tobytes() == w.tobytes(), f"case {k}"


@pytest.mark.parametrize("arg", [NHWC, (0, 1, 2), None])
def test_clone_dim_order_rejects_a_dim_order_that_is_not_the_outs(arg):
    x = sample((1, 2, 3, 4), "int8")
    p, feeds, _ = clone_program([(x, "int8", NHWC, NCHW, NCHW), (x, "int8", NCHW, NCHW, NCHW)])
    p.instructions[1].args[2] = p.add_scalar("none") if arg is None else p.add_scalar("int_list", list(arg))
    p.values[p.instructions[1].args[3]].dim_order = NHWC if arg is None else NCHW
    with pytest.raises(HostRunError, match="KernelFailed 1"):
        run_on_host(p, feeds)
