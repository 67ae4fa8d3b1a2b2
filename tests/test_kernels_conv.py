"""fp32 portable kernels, part A: convolution, matrix, pooling, normalisation.

Each test packs many cases into one program (one instruction per case, each
with its own input and output), runs it natively with run_on_host (runtime +
the kernels, built once per operator set under ASan/UBSan) and compares every
output with PyTorch.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction, Program

RTOL = 1e-4
ATOL = 1e-5
INF = math.inf


class Batch:
    """A program of independent one-instruction cases, run in one go."""

    def __init__(self):
        self.p = Program()
        self.inputs = []
        self.expected = []  # (output value index, expected array, label)

    def input(self, arr: np.ndarray) -> int:
        i = self.p.add_tensor(arr.shape, str(arr.dtype))
        self.p.inputs.append(i)
        self.inputs.append(arr)
        return i

    def const(self, arr: np.ndarray) -> int:
        return self.p.add_tensor(arr.shape, str(arr.dtype), data=np.ascontiguousarray(arr))

    def output(self, expected, label: str = "") -> int:
        expected = np.asarray(expected)
        i = self.p.add_tensor(expected.shape, str(expected.dtype))
        self.p.outputs.append(i)
        self.expected.append((i, expected, label))
        return i

    def ints(self, v) -> int:
        return self.p.add_scalar("int_list", [int(x) for x in v])

    def int(self, v) -> int:
        return self.p.add_scalar("int", int(v))

    def float(self, v) -> int:
        return self.p.add_scalar("float", float(v))

    def bool(self, v) -> int:
        return self.p.add_scalar("bool", bool(v))

    def none(self) -> int:
        return self.p.add_scalar("none")

    def tensor_list(self, items) -> int:
        return self.p.add_scalar("tensor_list", list(items))

    def op(self, name: str, args) -> None:
        self.p.instructions.append(Instruction(name, list(args)))

    def run_and_check(self, rtol=RTOL, atol=ATOL) -> None:
        outs = run_on_host(self.p, self.inputs)
        assert len(outs) == len(self.expected)
        for got, (_, want, label) in zip(outs, self.expected):
            assert got.shape == want.shape, label
            if want.dtype == np.int64:
                np.testing.assert_array_equal(got, want, err_msg=label)
            else:
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=label)


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# -- convolution --------------------------------------------------------------

def add_convolution(b: Batch, rng, x_shape, w_shape, bias=True, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                    groups=1, transposed=False, output_padding=None, label=""):
    x = rand(rng, *x_shape)
    w = rand(rng, *w_shape)
    out_ch = w_shape[1] * groups if transposed else w_shape[0]
    bv = rand(rng, out_ch) if bias else None
    nd = len(x_shape) - 2
    output_padding = output_padding or (0,) * nd
    if nd == 1:
        fn = F.conv_transpose1d if transposed else F.conv1d
    else:
        fn = F.conv_transpose2d if transposed else F.conv2d
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    if transposed:
        kw["output_padding"] = output_padding
    want = fn(t(x), t(w), None if bv is None else t(bv), **kw).numpy()
    xi, wi = b.input(x), b.const(w)
    bi = b.const(bv) if bias else b.none()
    o = b.output(want, label or f"conv x={x_shape} w={w_shape} {kw}")
    b.op("aten::convolution.out", [xi, wi, bi, b.ints(stride), b.ints(padding), b.ints(dilation), b.bool(transposed),
                                   b.ints(output_padding), b.int(groups), o, o])


def test_convolution_cases():
    rng = np.random.default_rng(0)
    b = Batch()
    add_convolution(b, rng, (1, 1, 28, 28), (8, 1, 5, 5), padding=(2, 2))  # MNIST conv1
    add_convolution(b, rng, (1, 8, 14, 14), (16, 8, 5, 5), padding=(2, 2))  # MNIST conv2
    add_convolution(b, rng, (2, 3, 9, 7), (4, 3, 3, 3))  # batch, no padding
    add_convolution(b, rng, (1, 3, 9, 8), (4, 3, 3, 3), stride=(2, 2), padding=(1, 1))
    add_convolution(b, rng, (1, 2, 10, 11), (3, 2, 3, 3), dilation=(2, 2), padding=(2, 1))
    add_convolution(b, rng, (1, 4, 7, 7), (6, 2, 3, 3), groups=2, padding=(1, 1), bias=False)
    add_convolution(b, rng, (1, 6, 8, 8), (6, 1, 3, 3), groups=6, padding=(1, 1))  # depthwise
    add_convolution(b, rng, (1, 4, 9, 9), (8, 1, 3, 3), groups=4, stride=(2, 2), padding=(1, 1))  # depth mult 2
    add_convolution(b, rng, (1, 8, 5, 6), (5, 8, 1, 1))  # pointwise
    add_convolution(b, rng, (1, 8, 5, 6), (5, 8, 1, 1), stride=(2, 2), bias=False)  # strided pointwise
    add_convolution(b, rng, (1, 2, 6, 6), (3, 2, 1, 1), padding=(1, 1))  # 1x1 with padding
    add_convolution(b, rng, (1, 3, 12, 10), (2, 3, 7, 7), padding=(3, 3), stride=(1, 2))
    add_convolution(b, rng, (1, 2, 5, 9), (2, 2, 2, 4), padding=(1, 2))  # even / odd kernel widths
    add_convolution(b, rng, (1, 1, 3, 3), (2, 1, 5, 5), padding=(2, 2))  # kernel wider than input
    add_convolution(b, rng, (1, 2, 6, 20), (3, 2, 1, 9), padding=(0, 4), dilation=(1, 3), stride=(1, 3))
    add_convolution(b, rng, (1, 10, 49, 10), (64, 10, 10, 4), padding=(5, 1), stride=(2, 2))  # KWS DS-CNN stem
    add_convolution(b, rng, (2, 4, 30), (6, 4, 3), stride=(1,), padding=(1,), dilation=(1,))  # conv1d
    add_convolution(b, rng, (1, 4, 30), (4, 2, 5), stride=(2,), padding=(4,), dilation=(2,), groups=2, bias=False)
    b.run_and_check()


def test_convolution_transposed():
    rng = np.random.default_rng(1)
    b = Batch()
    add_convolution(b, rng, (1, 4, 5, 5), (4, 3, 3, 3), transposed=True)
    add_convolution(b, rng, (2, 4, 5, 6), (4, 3, 3, 3), transposed=True, stride=(2, 2), padding=(1, 1),
                    output_padding=(1, 1))
    add_convolution(b, rng, (1, 4, 4, 4), (4, 2, 2, 2), transposed=True, stride=(2, 2), bias=False)
    add_convolution(b, rng, (1, 4, 5, 5), (4, 1, 3, 3), transposed=True, groups=2, dilation=(2, 2), padding=(2, 1))
    add_convolution(b, rng, (1, 3, 7, 7), (3, 2, 4, 3), transposed=True, stride=(3, 2), padding=(1, 0),
                    output_padding=(2, 1))
    add_convolution(b, rng, (1, 3, 11), (3, 2, 4), transposed=True, stride=(2,), padding=(1,),
                    output_padding=(1,), dilation=(1,))  # conv_transpose1d
    b.run_and_check()


@st.composite
def conv_case(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    depthwise = draw(st.booleans())
    cin = groups * draw(st.integers(1, 3))
    if depthwise:
        groups = cin
    cout = groups * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    ph, pw = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 12))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - 2 * pw), 12))
    return dict(x_shape=(1, cin, h, w), w_shape=(cout, cin // groups, kh, kw), groups=groups, stride=(sh, sw),
                padding=(ph, pw), dilation=(dh, dw), bias=draw(st.booleans()))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(conv_case(), min_size=10, max_size=10), seed=st.integers(0, 2**32 - 1))
def test_convolution_random(cases, seed):
    rng = np.random.default_rng(seed)
    b = Batch()
    for c in cases:
        add_convolution(b, rng, **c)
    b.run_and_check()


def add_mcu_conv2d(b: Batch, rng, x_shape, w_shape, lo, hi, bias=True, stride=(1, 1), padding=(0, 0),
                   dilation=(1, 1), groups=1):
    x, w = rand(rng, *x_shape), rand(rng, *w_shape)
    bv = rand(rng, w_shape[0]) if bias else None
    y = F.conv2d(t(x), t(w), None if bv is None else t(bv), stride=stride, padding=padding, dilation=dilation,
                 groups=groups)
    want = torch.clamp(y, lo, hi).numpy()
    xi, wi = b.input(x), b.const(w)
    bi = b.const(bv) if bias else b.none()
    o = b.output(want, f"mcu::conv2d {x_shape} {w_shape} [{lo}, {hi}]")
    b.op("mcu::conv2d.out", [xi, wi, bi, b.ints(stride), b.ints(padding), b.ints(dilation), b.int(groups),
                             b.float(lo), b.float(hi), o, o])


def test_mcu_conv2d_fused_clamp():
    rng = np.random.default_rng(2)
    b = Batch()
    add_mcu_conv2d(b, rng, (1, 1, 28, 28), (8, 1, 5, 5), 0.0, INF, padding=(2, 2))  # ReLU
    add_mcu_conv2d(b, rng, (1, 4, 9, 9), (4, 1, 3, 3), 0.0, 6.0, padding=(1, 1), groups=4, stride=(2, 2))  # ReLU6
    add_mcu_conv2d(b, rng, (1, 8, 6, 6), (16, 8, 1, 1), -INF, INF, bias=False)  # no clamp
    add_mcu_conv2d(b, rng, (2, 3, 7, 8), (5, 3, 3, 2), -0.5, 0.25, dilation=(2, 1), padding=(1, 1))
    b.run_and_check()


# -- matrix -------------------------------------------------------------------

def test_linear_and_mcu_linear():
    rng = np.random.default_rng(3)
    b = Batch()
    for in_shape, out_f, bias in [((1, 400), 10, True), ((3, 7), 5, False), ((2, 3, 33), 17, True), ((16,), 4, True),
                                  ((1, 640), 128, True)]:
        x, w = rand(rng, *in_shape), rand(rng, out_f, in_shape[-1])
        bv = rand(rng, out_f) if bias else None
        want = F.linear(t(x), t(w), None if bv is None else t(bv)).numpy()
        xi, wi = b.input(x), b.const(w)
        bi = b.const(bv) if bias else b.none()
        o = b.output(want, f"linear {in_shape} -> {out_f}")
        b.op("aten::linear.out", [xi, wi, bi, o, o])
        for lo, hi in [(0.0, INF), (-1.0, 0.5)]:
            xi = b.input(x)
            bi = b.const(bv) if bias else b.none()
            o = b.output(np.clip(want, lo, hi), f"mcu::linear {in_shape} -> {out_f} [{lo}, {hi}]")
            b.op("mcu::linear.out", [xi, b.const(w), bi, b.float(lo), b.float(hi), o, o])
    b.run_and_check()


def test_mm_bmm_addmm():
    rng = np.random.default_rng(4)
    b = Batch()
    for m, k, n in [(1, 1, 1), (3, 5, 7), (8, 16, 9), (2, 33, 4)]:
        x, y = rand(rng, m, k), rand(rng, k, n)
        o = b.output((t(x) @ t(y)).numpy(), f"mm {m}x{k}x{n}")
        b.op("aten::mm.out", [b.input(x), b.const(y), o, o])
    for bs, m, k, n in [(1, 2, 3, 4), (3, 4, 6, 5)]:
        x, y = rand(rng, bs, m, k), rand(rng, bs, k, n)
        o = b.output(torch.bmm(t(x), t(y)).numpy(), f"bmm {bs}x{m}x{k}x{n}")
        b.op("aten::bmm.out", [b.input(x), b.input(y), o, o])
    m, k, n = 4, 6, 5
    for self_shape, beta, alpha in [((n,), 1, 1), ((1, n), 0.5, 2.0), ((m, 1), 1, -1.5), ((m, n), 2, 1), ((), 1, 1),
                                    ((n,), 0, 1)]:
        s, x, y = rand(rng, *self_shape), rand(rng, m, k), rand(rng, k, n)
        if beta == 0:
            s[...] = np.nan  # ignored when beta == 0, as in PyTorch
        want = torch.addmm(t(s), t(x), t(y), beta=beta, alpha=alpha).numpy()
        o = b.output(want, f"addmm self={self_shape} beta={beta} alpha={alpha}")
        scal = b.int if isinstance(beta, int) else b.float
        b.op("aten::addmm.out", [b.const(s), b.input(x), b.const(y), scal(beta),
                                 (b.int if isinstance(alpha, int) else b.float)(alpha), o, o])
    b.run_and_check()


# -- pooling ------------------------------------------------------------------

MAX_POOL_CASES = [
    # x_shape, kernel, stride, padding, dilation, ceil_mode
    ((1, 8, 28, 28), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 3, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 2, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((1, 2, 8, 8), (2, 3), (), (0, 1), (1, 1), True),  # stride [] = kernel
    ((1, 2, 11, 10), (3, 2), (1, 2), (1, 0), (2, 3), False),
    ((1, 2, 10, 10), (3, 3), (3, 3), (1, 1), (2, 2), True),
    ((3, 6, 5), (2, 2), (1, 1), (1, 1), (1, 1), False),  # 3-D input
]


def test_max_pool2d_with_indices_and_mcu_max_pool2d():
    rng = np.random.default_rng(5)
    b = Batch()
    for x_shape, k, s, p, d, ceil in MAX_POOL_CASES:
        x = rand(rng, *x_shape)
        want, idx = torch.ops.aten.max_pool2d_with_indices(t(x), list(k), list(s), list(p), list(d), ceil)
        label = f"max_pool {x_shape} k={k} s={s} p={p} d={d} ceil={ceil}"
        o, oi = b.output(want.numpy(), label), b.output(idx.numpy(), label + " indices")
        args = [b.ints(k), b.ints(s), b.ints(p), b.ints(d), b.bool(ceil)]
        b.op("aten::max_pool2d_with_indices.out", [b.input(x), *args, o, oi, b.tensor_list([o, oi])])
        o2 = b.output(want.numpy(), "mcu::max_pool2d " + label)
        b.op("mcu::max_pool2d.out", [b.input(x), *args, o2, o2])
    # NaN wins and -inf everywhere still gives a valid index.
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    x[0, 0, 1, 2] = np.nan
    want, idx = torch.ops.aten.max_pool2d_with_indices(t(x), [2, 2], [2, 2], [0, 0], [1, 1], False)
    o, oi = b.output(want.numpy(), "nan/-inf"), b.output(idx.numpy(), "nan/-inf indices")
    b.op("aten::max_pool2d_with_indices.out", [b.input(x), b.ints([2, 2]), b.ints([2, 2]), b.ints([0, 0]),
                                               b.ints([1, 1]), b.bool(False), o, oi, b.tensor_list([o, oi])])
    o3 = b.output(want.numpy(), "mcu::max_pool2d nan/-inf (2x2 stride 2 fast path)")
    b.op("mcu::max_pool2d.out", [b.input(x), b.ints([2, 2]), b.ints([2, 2]), b.ints([0, 0]), b.ints([1, 1]),
                                 b.bool(False), o3, o3])
    # The 2x2 / stride 2 fast path on odd sizes (the last row and column are dropped) and batch 2.
    x = rand(rng, 2, 3, 7, 9)
    o4 = b.output(torch.nn.functional.max_pool2d(t(x), 2).numpy(), "mcu::max_pool2d 2x2 odd sizes")
    b.op("mcu::max_pool2d.out", [b.input(x), b.ints([2, 2]), b.ints([2, 2]), b.ints([0, 0]), b.ints([1, 1]),
                                 b.bool(False), o4, o4])
    # The fast path's NaN and signed-zero rules against PyTorch's: NaN anywhere in a window (several per
    # window too), +-0 ties, +-inf.
    x = rng.choice(np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5], np.float32),
                   size=(1, 4, 10, 12)).astype(np.float32)
    o5 = b.output(torch.nn.functional.max_pool2d(t(x), 2).numpy(), "mcu::max_pool2d 2x2 NaN/zeros/inf")
    b.op("mcu::max_pool2d.out", [b.input(x), b.ints([2, 2]), b.ints([2, 2]), b.ints([0, 0]), b.ints([1, 1]),
                                 b.bool(False), o5, o5])
    b.run_and_check(rtol=0, atol=0)


def test_avg_pool2d():
    rng = np.random.default_rng(6)
    b = Batch()
    cases = [
        # x_shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
        ((1, 4, 8, 8), (2, 2), (2, 2), (0, 0), False, True, None),
        ((2, 3, 7, 9), (3, 3), (2, 2), (1, 1), False, True, None),
        ((1, 3, 7, 9), (3, 3), (2, 2), (1, 1), False, False, None),
        ((1, 3, 7, 9), (3, 3), (2, 2), (1, 1), True, True, None),
        ((1, 3, 7, 9), (3, 2), (2, 2), (1, 1), True, False, None),
        ((1, 2, 6, 6), (3, 3), (), (1, 0), True, True, None),
        ((1, 2, 5, 5), (2, 2), (1, 1), (1, 1), False, True, 3),
        ((1, 64, 25, 5), (25, 5), (25, 5), (0, 0), False, True, None),  # KWS global pool
        ((3, 5, 5), (3, 3), (2, 2), (1, 1), True, False, None),  # 3-D input
    ]
    for x_shape, k, s, p, ceil, cip, div in cases:
        x = rand(rng, *x_shape)
        want = torch.ops.aten.avg_pool2d(t(x), list(k), list(s), list(p), ceil, cip, div).numpy()
        o = b.output(want, f"avg_pool {x_shape} k={k} s={s} p={p} ceil={ceil} cip={cip} div={div}")
        b.op("aten::avg_pool2d.out", [b.input(x), b.ints(k), b.ints(s), b.ints(p), b.bool(ceil), b.bool(cip),
                                      b.none() if div is None else b.int(div), o, o])
    b.run_and_check()


def test_adaptive_avg_pool2d_and_mean():
    rng = np.random.default_rng(7)
    b = Batch()
    for x_shape, size in [((1, 8, 7, 7), (1, 1)), ((2, 3, 10, 7), (3, 4)), ((1, 2, 5, 5), (5, 5)),
                          ((1, 2, 4, 6), (8, 3)), ((3, 9, 9), (2, 2))]:
        x = rand(rng, *x_shape)
        want = torch.ops.aten._adaptive_avg_pool2d(t(x), list(size)).numpy()
        o = b.output(want, f"adaptive {x_shape} -> {size}")
        b.op("aten::_adaptive_avg_pool2d.out", [b.input(x), b.ints(size), o, o])
    for x_shape, dims, keepdim in [((1, 16, 8, 8), [-1, -2], True), ((2, 16, 5, 3), [2, 3], False),
                                   ((4, 10), [-1], False), ((4, 10), [0], True), ((2, 3, 4, 5), [0, 2], False),
                                   ((2, 3, 4, 5), [1, 3], True), ((2, 3, 4), None, False), ((2, 3, 4), [], True),
                                   ((3, 4, 5), [1], False), ((1, 64, 32, 32), [2, 3], True)]:
        x = rand(rng, *x_shape)
        want = torch.ops.aten.mean.dim(t(x), dims, keepdim).numpy()
        o = b.output(want, f"mean {x_shape} dims={dims} keepdim={keepdim}")
        b.op("aten::mean.out", [b.input(x), b.none() if dims is None else b.ints(dims), b.bool(keepdim), b.none(),
                                o, o])
    b.run_and_check()


# -- normalisation ------------------------------------------------------------

def test_native_layer_norm():
    rng = np.random.default_rng(8)
    b = Batch()
    for x_shape, norm_shape, affine in [((2, 5, 16), (16,), True), ((3, 4, 6), (4, 6), True), ((4, 7), (7,), False),
                                        ((1, 10, 64), (64,), True)]:
        x = rand(rng, *x_shape) * 3 + 1
        w = rand(rng, *norm_shape) if affine else None
        bias = rand(rng, *norm_shape) if affine else None
        eps = 1e-5
        out, mean, rstd = torch.ops.aten.native_layer_norm(t(x), list(norm_shape), None if w is None else t(w),
                                                          None if bias is None else t(bias), eps)
        label = f"layer_norm {x_shape} {norm_shape}"
        o0, o1, o2 = b.output(out.numpy(), label), b.output(mean.numpy(), label + " mean"), b.output(
            rstd.numpy(), label + " rstd")
        b.op("aten::native_layer_norm.out", [b.input(x), b.ints(norm_shape), b.const(w) if affine else b.none(),
                                             b.const(bias) if affine else b.none(), b.float(eps), o0, o1, o2,
                                             b.tensor_list([o0, o1, o2])])
    b.run_and_check()


def test_batch_norm_no_training():
    rng = np.random.default_rng(9)
    b = Batch()
    for x_shape, affine in [((2, 4, 5, 5), True), ((3, 6), True), ((1, 3, 10), False), ((1, 8, 14, 14), True)]:
        c = x_shape[1]
        x = rand(rng, *x_shape)
        w, bias, mean = rand(rng, c), rand(rng, c), rand(rng, c)
        var = (rng.random(c) + 0.1).astype(np.float32)
        eps = 1e-3
        out, _, _ = torch.ops.aten._native_batch_norm_legit_no_training(
            t(x), t(w) if affine else None, t(bias) if affine else None, t(mean), t(var), 0.1, eps)
        o0 = b.output(out.numpy(), f"batch_norm {x_shape} affine={affine}")
        # ATen's inference variant returns empty save_mean / save_invstd.
        o1 = b.p.add_tensor((0,), "float32")
        o2 = b.p.add_tensor((0,), "float32")
        b.op("aten::_native_batch_norm_legit_no_training.out",
             [b.input(x), b.const(w) if affine else b.none(), b.const(bias) if affine else b.none(), b.const(mean),
              b.const(var), b.float(0.1), b.float(eps), o0, o1, o2, b.tensor_list([o0, o1, o2])])
    b.run_and_check()


# -- rejected arguments ---------------------------------------------------------

def test_convolution_rejects_wrong_out_shape():
    rng = np.random.default_rng(10)
    b = Batch()
    x, w = rand(rng, 1, 2, 6, 6), rand(rng, 3, 2, 3, 3)
    xi = b.input(x)
    o = b.output(np.zeros((1, 3, 6, 6), np.float32))  # right shape would be 4x4 without padding
    b.op("aten::convolution.out", [xi, b.const(w), b.none(), b.ints([1, 1]), b.ints([0, 0]), b.ints([1, 1]),
                                   b.bool(False), b.ints([0, 0]), b.int(1), o, o])
    with pytest.raises(HostRunError, match="KernelFailed"):
        b.run_and_check()
