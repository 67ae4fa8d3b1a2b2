"""Integer and bool dtypes of the nn kernels that ExecuTorch's portable runtime computes in them:
convolution / conv_transpose (int64, int32), avg_pool2d (int64), max_pool2d (int32, int64, with and
without indices), clamp.Tensor, atan2 and pow.Tensor_Scalar on bool. Host runner against PyTorch,
exact; bad arguments give a clean kernel failure.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction
from tests.test_ops_reduce import Builder

RNG = np.random.default_rng(64)


def ints(shape, dtype, lo=-20, hi=20):
    return RNG.integers(lo, hi, shape).astype(dtype)


def t64(a):
    """A tensor for the reference: int32 convolutions are computed in int64 and wrapped back (ATen's CPU
    int32 convolution lacks dilated/transposed variants; the wrapped int64 result is the exact int32 one)."""
    return None if a is None else torch.from_numpy(a.astype(np.int64))


def conv_call(bld, x, w, b, stride, padding, dilation, transposed, output_padding, groups, want, dtype):
    bias = bld.scalar("none") if b is None else b
    return bld.call("aten::convolution.out",
                    [x, w, bias, bld.scalar("int_list", stride), bld.scalar("int_list", padding),
                     bld.scalar("int_list", dilation), bld.scalar("bool", transposed),
                     bld.scalar("int_list", output_padding), bld.scalar("int", groups)], want.shape, dtype)


CONVS = [  # (input shape, weight shape, stride, padding, dilation, groups, bias)
    ((1, 2, 5, 6), (3, 2, 3, 3), [1, 1], [0, 0], [1, 1], 1, True),
    ((2, 4, 6, 5), (4, 2, 2, 3), [2, 1], [1, 2], [1, 2], 2, False),
    ((1, 3, 7, 7), (3, 1, 3, 3), [2, 2], [1, 1], [2, 2], 3, True),  # depthwise, dilated
    ((1, 2, 4, 4), (5, 2, 1, 1), [1, 1], [0, 0], [1, 1], 1, True),  # pointwise
    ((2, 2, 9), (4, 2, 3), [2], [1], [1], 1, True),  # conv1d
    ((1, 4, 8), (4, 1, 3), [1], [2], [2], 4, False),  # grouped conv1d
]
TRANSPOSED = [  # (input shape, weight shape, stride, padding, dilation, output_padding, groups, bias)
    ((1, 2, 3, 4), (2, 3, 3, 3), [2, 2], [1, 0], [1, 1], [1, 0], 1, True),
    ((2, 4, 3, 3), (4, 1, 2, 2), [1, 2], [0, 1], [2, 1], [0, 1], 2, False),
    ((1, 2, 5), (2, 2, 4), [3], [1], [1], [2], 1, True),  # conv_transpose1d
]


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_convolution_int(dtype):
    bld = Builder()
    for k, (xs, ws, stride, padding, dilation, groups, has_bias) in enumerate(CONVS):
        xa, wa = ints(xs, dtype), ints(ws, dtype)
        ba = ints((ws[0],), dtype) if has_bias else None
        x, w = bld.input(xa, dtype), bld.input(wa, dtype)
        b = bld.input(ba, dtype) if has_bias else None
        fn = F.conv1d if len(xs) == 3 else F.conv2d
        want = fn(t64(xa), t64(wa), t64(ba), stride, padding, dilation, groups).to(getattr(torch, dtype))
        o = conv_call(bld, x, w, b, stride, padding, dilation, False, [0] * len(stride), groups, want, dtype)
        bld.expect(f"conv {k}", o, want)
    for k, (xs, ws, stride, padding, dilation, out_pad, groups, has_bias) in enumerate(TRANSPOSED):
        xa, wa = ints(xs, dtype), ints(ws, dtype)
        ba = ints((ws[1] * groups,), dtype) if has_bias else None
        x, w = bld.input(xa, dtype), bld.input(wa, dtype)
        b = bld.input(ba, dtype) if has_bias else None
        fn = F.conv_transpose1d if len(xs) == 3 else F.conv_transpose2d
        want = fn(t64(xa), t64(wa), t64(ba), stride, padding, out_pad, groups, dilation).to(getattr(torch, dtype))
        o = conv_call(bld, x, w, b, stride, padding, dilation, True, out_pad, groups, want, dtype)
        bld.expect(f"conv_transpose {k}", o, want)
    # Products and sums that overflow wrap, as ATen's.
    big = np.iinfo(dtype).max // 3
    xa = np.full((1, 1, 3, 3), big, dtype=dtype)
    wa = np.array([[[[3, 5], [-7, 11]]]], dtype=dtype)
    want = F.conv2d(t64(xa), t64(wa)).to(getattr(torch, dtype))
    o = conv_call(bld, bld.input(xa, dtype), bld.input(wa, dtype), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                  want, dtype)
    bld.expect("wrapping", o, want)
    bld.run_and_check(rtol=0, atol=0)


def test_avg_pool2d_int64():
    bld = Builder()
    xa = ints((2, 3, 7, 6), "int64", -100, 100)
    x = bld.input(xa, "int64")
    tx = torch.from_numpy(xa)
    cases = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
        ([2, 2], [], [0, 0], False, True, None),
        ([3, 3], [2, 2], [1, 1], False, True, None),
        ([3, 3], [2, 2], [1, 1], True, False, None),
        ([3, 2], [2, 3], [1, 0], True, True, None),
        ([2, 3], [1, 1], [1, 1], False, False, 5),
        ([2, 2], [2, 2], [0, 0], False, True, -3),
        ([2, 2], [2, 2], [0, 0], False, True, -1),
    ]
    for k, (kernel, stride, padding, ceil_mode, cip, div) in enumerate(cases):
        want = F.avg_pool2d(tx, kernel, stride or None, padding, ceil_mode, cip, div)
        o = bld.call("aten::avg_pool2d.out",
                     [x, bld.scalar("int_list", kernel), bld.scalar("int_list", stride),
                      bld.scalar("int_list", padding), bld.scalar("bool", ceil_mode), bld.scalar("bool", cip),
                      bld.scalar("none") if div is None else bld.scalar("int", div)], want.shape, "int64")
        bld.expect(f"avg_pool2d {k}", o, want)
    x3a = ints((3, 5, 5), "int64")  # [C, H, W]
    want = F.avg_pool2d(torch.from_numpy(x3a), 3, 1, 1)
    o = bld.call("aten::avg_pool2d.out",
                 [bld.input(x3a, "int64"), bld.scalar("int_list", [3, 3]), bld.scalar("int_list", [1, 1]),
                  bld.scalar("int_list", [1, 1]), bld.scalar("bool", False), bld.scalar("bool", True),
                  bld.scalar("none")], want.shape, "int64")
    bld.expect("avg_pool2d 3-D", o, want)
    bld.run_and_check(rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_max_pool2d_int(dtype):
    bld = Builder()
    xa = ints((2, 2, 7, 8), dtype, -5, 5)  # small range: many ties (the first index wins)
    xa[0, 0, :3, :3] = np.iinfo(dtype).min  # windows of the smallest value only
    x = bld.input(xa, dtype)
    tx = torch.from_numpy(xa)
    cases = [  # kernel, stride, padding, dilation, ceil_mode
        ([2, 2], [2, 2], [0, 0], [1, 1], False),
        ([3, 3], [2, 2], [1, 1], [1, 1], True),
        ([3, 2], [1, 2], [1, 1], [2, 1], False),
        ([2, 3], [3, 1], [1, 0], [1, 2], True),
    ]
    for k, (kernel, stride, padding, dilation, ceil_mode) in enumerate(cases):
        want, want_idx = F.max_pool2d(tx, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
        args = [x, bld.scalar("int_list", kernel), bld.scalar("int_list", stride), bld.scalar("int_list", padding),
                bld.scalar("int_list", dilation), bld.scalar("bool", ceil_mode)]
        out = bld.p.add_tensor(tuple(want.shape), dtype)
        idx = bld.p.add_tensor(tuple(want.shape), "int64")
        bld.p.instructions.append(Instruction("aten::max_pool2d_with_indices.out",
                                              args + [out, idx, bld.scalar("tensor_list", [out, idx])]))
        bld.expect(f"max_pool2d_with_indices {k}", out, want)
        bld.expect(f"max_pool2d_with_indices {k} indices", idx, want_idx)
        o = bld.call("mcu::max_pool2d.out", args, want.shape, dtype)
        bld.expect(f"mcu::max_pool2d {k}", o, want)
    bld.run_and_check(rtol=0, atol=0)


def test_bool_inputs():
    """clamp.Tensor of bools (one bound: PyTorch has no bool clamp with both), atan2 of bool/int (float
    result), square (pow 2) of bool (int64)."""
    bld = Builder()
    a = RNG.integers(0, 2, (3, 4)).astype(np.bool_)
    bb = RNG.integers(0, 2, (3, 4)).astype(np.bool_)
    c = RNG.integers(0, 2, (4,)).astype(np.bool_)
    n = RNG.integers(-3, 3, (3, 4)).astype(np.int64)
    ta, tb, tc, tn = (torch.from_numpy(v) for v in (a, bb, c, n))
    xa, xb, xc, xn = bld.input(a, "bool"), bld.input(bb, "bool"), bld.input(c, "bool"), bld.input(n, "int64")
    none = bld.scalar("none")
    for label, args, want in (
            ("clamp_min", [xa, xb, none], torch.clamp_min(ta, tb)),
            ("clamp_max", [xa, none, xc], torch.clamp_max(ta, tc))):
        bld.expect(label, bld.call("aten::clamp.Tensor_out", args, want.shape, "bool"), want)
    for label, (x, y), want in (("atan2 bool bool", (xa, xb), torch.atan2(ta, tb)),
                                ("atan2 bool int64", (xa, xn), torch.atan2(ta, tn)),
                                ("atan2 int64 bool", (xn, xc), torch.atan2(tn, tc))):
        bld.expect(label, bld.call("aten::atan2.out", [x, y], want.shape, "float32"), want)
    want = torch.square(ta)
    assert want.dtype == torch.int64
    bld.expect("square", bld.call("aten::pow.Tensor_Scalar_out", [xa, bld.scalar("int", 2)], want.shape, "int64"),
               want)
    bld.run_and_check(rtol=1e-6, atol=1e-6)


def _conv_program(x_dtype, w_dtype, b_dtype, out_dtype, out_shape=(1, 1, 2, 2)):
    bld = Builder()
    x = bld.input(ints((1, 1, 3, 3), x_dtype), x_dtype)
    w = bld.input(ints((1, 1, 2, 2), w_dtype), w_dtype)
    b = bld.input(ints((1,), b_dtype), b_dtype) if b_dtype else None
    o = conv_call(bld, x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, torch.zeros(out_shape), out_dtype)
    bld.p.outputs.append(o)
    return bld


def _pool_program(op, dtype, out_shape=(1, 1, 2, 2), index_dtype="int64"):
    bld = Builder()
    x = bld.input(ints((1, 1, 4, 4), dtype), dtype)
    k = bld.scalar("int_list", [2, 2])
    if op == "avg":
        o = bld.call("aten::avg_pool2d.out", [x, k, k, bld.scalar("int_list", [0, 0]), bld.scalar("bool", False),
                                              bld.scalar("bool", True), bld.scalar("none")], out_shape, dtype)
    else:
        o = bld.p.add_tensor(out_shape, dtype)
        idx = bld.p.add_tensor(out_shape, index_dtype)
        args = [x, k, k, bld.scalar("int_list", [0, 0]), bld.scalar("int_list", [1, 1]), bld.scalar("bool", False)]
        bld.p.instructions.append(Instruction("aten::max_pool2d_with_indices.out",
                                              args + [o, idx, bld.scalar("tensor_list", [o, idx])]))
    bld.p.outputs.append(o)
    return bld


@pytest.mark.parametrize("make", [
    lambda: _conv_program("int64", "float32", None, "int64"),     # mixed input / weight dtypes
    lambda: _conv_program("int64", "int64", "int32", "int64"),    # bias of another dtype
    lambda: _conv_program("int64", "int64", None, "int32"),       # out of another dtype
    lambda: _conv_program("int64", "int64", None, "int64", (1, 1, 3, 3)),  # wrong out shape
    lambda: _pool_program("avg", "int32"),                        # ATen pools int64 only
    lambda: _pool_program("avg", "int64", (1, 1, 3, 3)),          # wrong out shape
    lambda: _pool_program("max", "int64", index_dtype="int32"),   # indices not int64
    lambda: _pool_program("max", "int32", (1, 1, 2, 3)),          # wrong out shape
], ids=["conv-mixed", "conv-bias-dtype", "conv-out-dtype", "conv-out-shape", "avg-int32", "avg-shape",
        "max-indices-dtype", "max-shape"])
def test_bad_arguments_fail_cleanly(make):
    bld = make()
    with pytest.raises(HostRunError, match="KernelFailed") as e:
        run_on_host(bld.p, bld.feeds)
    assert "signal" not in str(e.value).lower() and "sanitizer" not in str(e.value).lower()


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_selected_dtypes_leave_out_the_indices(dtype):
    """max_pool2d_with_indices' int64 indices are not a dtype it computes in: an fp32 program selects
    float32 only (no int64 pooling linked), an int32 one int32 only."""
    from mcu_gen.backends import kernels as registry
    bld = _pool_program("max", dtype)
    chosen = registry.selected_dtypes(bld.p, list(registry.find_kernels().values()))
    assert chosen["aten_max_pool2d_with_indices_out"] == {dtype}
