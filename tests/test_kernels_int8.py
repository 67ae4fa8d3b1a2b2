"""int8 kernels of ExecuTorch's cortex_m:: operators, bit-exact with its Python reference.

The reference is ExecuTorch 1.5's own ``backends/cortex_m/ops/operators.py``:
its implementation functions are loaded from the installed wheel's source
(without registering the torch library and without the tosa/ethos-u imports
that importing the package pulls in), so every expected output below comes
from the very code ExecuTorch uses as its oracle.

Each test packs many cases into one program (one instruction per case, inputs
as constants so that channels-last data can be given in its stored NHWC
order), runs it natively under ASan/UBSan with run_on_host, and requires the
outputs to equal the reference byte for byte.
"""
from __future__ import annotations

import importlib.util
import math
import re
import types
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction, Program

CL = (0, 2, 3, 1)  # channels-last dim_order


# -- the reference ---------------------------------------------------------------

@lru_cache(maxsize=None)
def reference():
    """operators.py's *_impl functions and passes_utils, loaded from the executorch wheel."""
    import executorch

    root = Path(list(executorch.__path__)[0]) / "backends" / "cortex_m"
    spec = importlib.util.spec_from_file_location("_cortex_m_passes_utils", root / "passes" / "passes_utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    src = (root / "ops" / "operators.py").read_text()
    src, n1 = re.subn(r"from executorch\.backends\.cortex_m\.passes\.passes_utils import \([^)]*\)\n", "", src)
    src, n2 = re.subn(r"from executorch\.backends\.cortex_m\.quantizer\.quantization_configs import \([^)]*\)\n",
                      "", src)
    src, n3 = re.subn(r"from torch\.library import impl, Library, register_fake\n", "", src)
    assert (n1, n2, n3) == (1, 1, 1), "operators.py changed shape; update the loader"

    class _Library:  # torch.library stand-ins: define nothing, register nothing
        def __init__(self, *args):
            pass

        def define(self, *args):
            pass

    def _keep(*args, **kwargs):
        return lambda f: f

    ns = {"__name__": "_cortex_m_operators", "Library": _Library, "impl": _keep, "register_fake": _keep,
          "CMSIS_SOFTMAX_SCALE": 1.0 / 256.0, "CMSIS_SOFTMAX_ZERO_POINT": -128}
    for name in ("dequantize_per_tensor_cmsis", "is_channel_broadcast", "is_channels_last",
                 "quantize_per_tensor_cmsis", "requantize_cmsis", "SHIFT_INT8"):
        ns[name] = getattr(utils, name)
    exec(compile(src, str(root / "ops" / "operators.py"), "exec"), ns)
    funcs = {k[: -len("_impl")]: v for k, v in ns.items() if k.endswith("_impl") and callable(v)}
    return types.SimpleNamespace(utils=utils, **funcs)


def multiplier_shift(scale: float):
    """Q31 multiplier and shift of a real scale (ExecuTorch's quantize_multiplier_aot)."""
    return reference().utils.quantize_multiplier_aot(scale)


def conv_reference(x, w_oihw, bias, stride, padding, dilation, groups, in_off, out_off, m, s, lo, hi):
    """The reference's convolution arithmetic with the accumulation in float64
    (exact): torch has no integer kernel for dilated convolutions, which
    ExecuTorch's reference therefore cannot run. Cross-checked against it below."""
    utils = reference().utils
    acc = torch.nn.functional.conv2d(x.to(torch.float64) + in_off, w_oihw.to(torch.float64),
                                     None if bias is None else bias.to(torch.float64), stride=tuple(stride),
                                     padding=tuple(padding), dilation=tuple(dilation), groups=groups).to(torch.int32)
    chans = [utils.requantize_cmsis(acc[:, c], int(m[c]), int(s[c])) for c in range(acc.shape[1])]
    return torch.clamp(torch.stack(chans, dim=1) + out_off, lo, hi).to(torch.int8)


def reference_conv(kind, x, w, *args):
    """ExecuTorch's quantized_conv2d / quantized_depthwise_conv2d, or
    conv_reference where torch cannot run it (dilation > 1)."""
    ref = reference()
    fn = ref.quantized_conv2d if kind == "conv" else ref.quantized_depthwise_conv2d
    if kind == "conv":
        bias, stride, padding, dilation, in_off, out_off, m, s, lo, hi, _ = args
        w_oihw, groups = w.permute(0, 3, 1, 2), x.shape[1] // w.shape[3]
    else:
        bias, stride, padding, dilation, _, in_off, out_off, m, s, lo, hi, _ = args
        w_oihw, groups = w.permute(3, 0, 1, 2), x.shape[1]
    mine = conv_reference(x, w_oihw, bias, stride, padding, dilation, groups, in_off, out_off, m, s, lo, hi)
    if all(d == 1 for d in dilation):
        theirs = fn(x, w, *args)
        assert torch.equal(theirs, mine), "float64 conv reference disagrees with ExecuTorch's"
        return theirs
    return mine


# -- programs ----------------------------------------------------------------

class Batch:
    """A program of independent one-instruction cases, run in one go."""

    def __init__(self):
        self.p = Program()
        self.expected = []  # (expected logical array, memory dim_order, label)

    def const(self, arr, dim_order=None) -> int:
        arr = np.asarray(arr)
        stored = arr if dim_order is None else np.ascontiguousarray(arr.transpose(dim_order))
        return self.p.add_tensor(arr.shape, str(arr.dtype), dim_order=dim_order, data=np.ascontiguousarray(stored))

    def output(self, expected, dim_order=None, label="", dtype=None) -> int:
        expected = np.asarray(expected)
        i = self.p.add_tensor(expected.shape, dtype or str(expected.dtype), dim_order=dim_order)
        self.p.outputs.append(i)
        self.expected.append((expected, dim_order, label))
        return i

    def scratch(self, n=16) -> int:
        return self.p.add_tensor((n,), "uint8")

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

    def op(self, name, args, out) -> None:
        self.p.instructions.append(Instruction(name, [*args, out, out]))

    def run(self):
        outs = run_on_host(self.p, [])
        got = []
        for raw, (want, order, _) in zip(outs, self.expected):
            if order is not None:  # stored in memory order: view it logically
                stored_shape = [want.shape[d] for d in order]
                raw = raw.reshape(-1).reshape(stored_shape).transpose(np.argsort(order))
            got.append(raw)
        return got

    def run_and_check(self):
        for got, (want, _, label) in zip(self.run(), self.expected):
            assert got.shape == want.shape, label
            np.testing.assert_array_equal(got, want, err_msg=label)


def i8(rng, *shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(np.int8)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def cl(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last)


def requant_params(rng, n, acc_scale=1e-3, edge=True):
    """Per-channel (multiplier, shift) lists: realistic ones plus edge cases."""
    mults, shifts = [], []
    for c in range(n):
        m, s = multiplier_shift(float(acc_scale * rng.uniform(0.3, 3.0)))
        mults.append(m)
        shifts.append(s)
    if edge and n >= 4:
        mults[0], shifts[0] = 2**31 - 1, -31  # near-2^31 multiplier, largest right shift
        mults[1], shifts[1] = 1 << 30, -3  # multiplier 0.5: ties at every odd multiple of 8
        mults[2], shifts[2] = 2**31 - 1, 0  # saturates
        mults[3], shifts[3] = 1 << 30, 1  # left shift
    return np.array(mults, np.int32), np.array(shifts, np.int32)


# -- requantization -----------------------------------------------------------

def test_requantize_matches_reference_at_the_edges():
    """quantized_mul with unit operands exposes requantize() on chosen values:
    ties of both signs, the largest multiplier, both shift extremes."""
    ref = reference()
    b = Batch()
    cases = [(1 << 30, -1), (1 << 30, -2), (2**31 - 1, -31), (2**31 - 1, 0), (1 << 30, 0), (1518500250, -5),
             (1 << 30, -7), (2**31 - 1, 1), (1073741825, -4), (1 << 30, 5)]
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    y = np.arange(127, -129, -1, dtype=np.int8).reshape(16, 16)
    for m, s in cases:
        for xzp, yzp, ozp in ((0, 0, 0), (-128, 127, -128), (127, -128, 127), (3, -5, 7)):
            want = ref.quantized_mul(t(x), xzp, t(y), yzp, ozp, m, s).numpy()
            o = b.output(want, label=f"mul m={m} s={s} zps={xzp},{yzp},{ozp}")
            b.op("cortex_m::quantized_mul.out", [b.const(x), b.int(xzp), b.const(y), b.int(yzp), b.int(ozp), b.int(m),
                                                 b.int(s)], o)
    b.run_and_check()


# -- quantize / dequantize -----------------------------------------------------

def test_quantize_dequantize():
    ref = reference()
    rng = np.random.default_rng(0)
    b = Batch()
    for scale, zp, qmin, qmax in ((0.05, 0, -128, 127), (0.0123456789, -128, -128, 127), (1 / 3, 127, -128, 127),
                                  (0.1, 10, -100, 100), (2.0**-7, -3, -128, 127)):
        x = (rng.standard_normal((2, 3, 5, 4)) * 4).astype(np.float32)
        # exact ties of x / scale, halfway values and out-of-range values
        x.flat[:8] = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e9, -1e9], np.float32) * np.float32(scale)
        want = ref.quantize_per_tensor(t(x), scale, zp, qmin, qmax, torch.int8).numpy()
        o = b.output(want, label=f"quantize {scale} {zp}")
        b.op("cortex_m::quantize_per_tensor.out", [b.const(x), b.float(scale), b.int(zp), b.int(qmin), b.int(qmax),
                                                   b.int(1)], o)
        q = i8(rng, 2, 3, 5, 4)
        want = ref.dequantize_per_tensor(t(q), scale, zp, -128, 127, torch.int8).numpy()
        o = b.output(want, label=f"dequantize {scale} {zp}")
        b.op("cortex_m::dequantize_per_tensor.out", [b.const(q), b.float(scale), b.int(zp), b.int(-128), b.int(127),
                                                     b.int(1)], o)
    # channels-last tensors keep their layout
    x = rng.standard_normal((1, 4, 3, 3)).astype(np.float32)
    want = ref.quantize_per_tensor(t(x), 0.02, 5, -128, 127, torch.int8).numpy()
    o = b.output(want, CL, "quantize channels-last")
    b.op("cortex_m::quantize_per_tensor.out", [b.const(x, CL), b.float(0.02), b.int(5), b.int(-128), b.int(127),
                                               b.int(1)], o)
    b.run_and_check()


# -- convolutions ----------------------------------------------------------------

def add_conv(b, rng, x_shape, w_shape, stride=(1, 1), padding=(0, 0), dilation=(1, 1), bias=True, nhwc=False,
             in_zp=None, out_zp=None, act=(-128, 127), edge=True):
    """quantized_conv2d; w_shape is OHWI."""
    ref = reference()
    x = i8(rng, *x_shape)
    w = i8(rng, *w_shape, lo=-127)
    cout = w_shape[0]
    bv = rng.integers(-5000, 5000, size=cout).astype(np.int32) if bias else None
    in_zp = int(rng.integers(-128, 128)) if in_zp is None else in_zp
    out_zp = int(rng.integers(-128, 128)) if out_zp is None else out_zp
    taps = w_shape[1] * w_shape[2] * w_shape[3]
    m, s = requant_params(rng, cout, acc_scale=1.0 / (taps * 300), edge=edge)
    args = (None if bv is None else t(bv), list(stride), list(padding), list(dilation), -in_zp, out_zp, t(m), t(s),
            act[0], act[1], torch.empty(0))
    xt = cl(t(x))
    want = reference_conv("conv", xt, t(w), *args).numpy()
    label = f"conv x={x_shape} w={w_shape} s={stride} p={padding} d={dilation}"
    if nhwc:
        xi = b.const(x.transpose(0, 2, 3, 1))
        o = b.output(want.transpose(0, 2, 3, 1), label=label + " nhwc")
        name = "cortex_m::quantized_conv2d_nhwc.out"
    else:
        xi = b.const(x, CL)
        o = b.output(want, CL, label)
        name = "cortex_m::quantized_conv2d.out"
    b.op(name, [xi, b.const(w), b.none() if bv is None else b.const(bv), b.ints(stride), b.ints(padding),
                b.ints(dilation), b.int(-in_zp), b.int(out_zp), b.const(m), b.const(s), b.int(act[0]), b.int(act[1]),
                b.scratch()], o)


def test_conv2d_cases():
    rng = np.random.default_rng(1)
    b = Batch()
    add_conv(b, rng, (1, 1, 28, 28), (8, 5, 5, 1), padding=(2, 2))  # MNIST conv1
    add_conv(b, rng, (1, 8, 14, 14), (16, 5, 5, 8), padding=(2, 2), act=(-128, 127))  # MNIST conv2
    add_conv(b, rng, (2, 3, 9, 7), (4, 3, 3, 3), in_zp=-128, out_zp=127)
    add_conv(b, rng, (1, 3, 9, 8), (5, 3, 3, 3), stride=(2, 2), padding=(1, 1), act=(-20, 100))  # fused ReLU-ish
    add_conv(b, rng, (1, 2, 10, 11), (4, 3, 3, 2), dilation=(2, 2), padding=(2, 1))
    add_conv(b, rng, (1, 4, 7, 7), (6, 3, 3, 2), padding=(1, 1), bias=False)  # groups 2
    add_conv(b, rng, (1, 8, 5, 6), (5, 1, 1, 8))  # pointwise
    add_conv(b, rng, (1, 8, 5, 6), (5, 1, 1, 8), stride=(2, 2), in_zp=127, out_zp=-128)
    add_conv(b, rng, (1, 1, 3, 3), (4, 5, 5, 1), padding=(2, 2))  # kernel wider than the input
    add_conv(b, rng, (1, 10, 49, 10), (8, 10, 4, 10), padding=(5, 1), stride=(2, 2))  # KWS DS-CNN stem shape
    add_conv(b, rng, (1, 3, 8, 8), (4, 3, 3, 3), padding=(1, 1), nhwc=True)
    add_conv(b, rng, (1, 4, 6, 5), (4, 2, 3, 4), stride=(1, 2), padding=(1, 0), nhwc=True, bias=False)
    b.run_and_check()


def add_depthwise(b, rng, x_shape, k, dm=1, stride=(1, 1), padding=(0, 0), dilation=(1, 1), bias=True, nhwc=False):
    ref = reference()
    x = i8(rng, *x_shape)
    cout = x_shape[1] * dm
    w = i8(rng, 1, k[0], k[1], cout, lo=-127)  # IHWO
    bv = rng.integers(-3000, 3000, size=cout).astype(np.int32) if bias else None
    in_zp, out_zp = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    m, s = requant_params(rng, cout, acc_scale=1.0 / (k[0] * k[1] * 300))
    args = (None if bv is None else t(bv), list(stride), list(padding), list(dilation), dm, -in_zp, out_zp, t(m),
            t(s), -128, 127, torch.empty(0))
    want = reference_conv("dw", cl(t(x)), t(w), *args).numpy()
    label = f"depthwise x={x_shape} k={k} dm={dm} s={stride} p={padding} d={dilation}"
    if nhwc:
        xi = b.const(x.transpose(0, 2, 3, 1))
        o = b.output(want.transpose(0, 2, 3, 1), label=label + " nhwc")
        name = "cortex_m::quantized_depthwise_conv2d_nhwc.out"
    else:
        xi, o = b.const(x, CL), b.output(want, CL, label)
        name = "cortex_m::quantized_depthwise_conv2d.out"
    b.op(name, [xi, b.const(w), b.none() if bv is None else b.const(bv), b.ints(stride), b.ints(padding),
                b.ints(dilation), b.int(dm), b.int(-in_zp), b.int(out_zp), b.const(m), b.const(s), b.int(-128),
                b.int(127), b.scratch()], o)


def test_depthwise_conv2d_cases():
    rng = np.random.default_rng(2)
    b = Batch()
    add_depthwise(b, rng, (1, 6, 8, 8), (3, 3), padding=(1, 1))
    add_depthwise(b, rng, (1, 40, 9, 9), (3, 3), stride=(2, 2), padding=(1, 1))  # more channels than one block
    add_depthwise(b, rng, (1, 4, 9, 9), (3, 3), dm=2, stride=(2, 2), padding=(1, 1), bias=False)
    add_depthwise(b, rng, (2, 3, 7, 6), (2, 4), dilation=(2, 1), padding=(1, 2))
    add_depthwise(b, rng, (1, 1, 10, 10), (5, 5), dm=3, padding=(2, 2))
    add_depthwise(b, rng, (1, 5, 6, 6), (3, 3), padding=(1, 1), nhwc=True)
    b.run_and_check()


def add_transpose_conv(b, rng, x_shape, cout, k, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                       dilation=(1, 1), bias=True, nhwc=False):
    ref = reference()
    cin = x_shape[1]
    x = i8(rng, *x_shape)
    # small weights keep the reference's float32 accumulation exact (< 2^24)
    w = i8(rng, cout, k[0], k[1], cin, lo=-20, hi=20)
    bv = rng.integers(-3000, 3000, size=cout).astype(np.int32) if bias else None
    in_zp, out_zp = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    m, s = requant_params(rng, cout, acc_scale=1.0 / (k[0] * k[1] * cin * 50))
    args = (None if bv is None else t(bv), list(stride), list(padding), list(output_padding), list(dilation),
            -in_zp, out_zp, t(m), t(s), -128, 127, torch.empty(0), torch.empty(0))
    want = ref.quantized_transpose_conv2d(cl(t(x)), t(w), *args).numpy()
    label = f"transpose conv x={x_shape} k={k} s={stride} p={padding} op={output_padding} d={dilation}"
    if nhwc:
        xi = b.const(x.transpose(0, 2, 3, 1))
        o = b.output(want.transpose(0, 2, 3, 1), label=label + " nhwc")
        name = "cortex_m::quantized_transpose_conv2d_nhwc.out"
    else:
        xi, o = b.const(x, CL), b.output(want, CL, label)
        name = "cortex_m::quantized_transpose_conv2d.out"
    b.op(name, [xi, b.const(w), b.none() if bv is None else b.const(bv), b.ints(stride), b.ints(padding),
                b.ints(output_padding), b.ints(dilation), b.int(-in_zp), b.int(out_zp), b.const(m), b.const(s),
                b.int(-128), b.int(127), b.scratch(), b.scratch()], o)


def test_transpose_conv2d_cases():
    rng = np.random.default_rng(3)
    b = Batch()
    add_transpose_conv(b, rng, (1, 4, 5, 5), 4, (3, 3))
    add_transpose_conv(b, rng, (2, 3, 4, 5), 5, (3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1))
    add_transpose_conv(b, rng, (1, 2, 4, 4), 3, (2, 2), stride=(2, 2), bias=False)
    add_transpose_conv(b, rng, (1, 3, 5, 4), 4, (3, 2), stride=(3, 2), padding=(1, 0), dilation=(2, 1),
                       output_padding=(2, 1))
    add_transpose_conv(b, rng, (1, 4, 3, 3), 2, (4, 4), stride=(2, 2), padding=(1, 1), nhwc=True)
    b.run_and_check()


# -- linear and batch matmul ---------------------------------------------------------

def add_linear(b, rng, x_shape, n_out, bias=True, kernel_sum=False, per_channel=False, act=(-128, 127)):
    ref = reference()
    k = x_shape[-1]
    x = i8(rng, *x_shape)
    w = i8(rng, n_out, k, lo=-127)
    bv = rng.integers(-20000, 20000, size=n_out).astype(np.int32) if bias else None
    in_zp, out_zp = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    if per_channel:
        m, s = requant_params(rng, n_out, acc_scale=1.0 / (k * 300))
        m, s = [int(v) for v in m], [int(v) for v in s]
    else:
        m0, s0 = multiplier_shift(1.0 / (k * 300) * float(rng.uniform(0.5, 2)))
        m, s = [m0], [s0]
    ks = None
    if kernel_sum:  # what ExecuTorch's lowering computes for MVE targets
        ks = (w.astype(np.int32).sum(axis=1) * -in_zp + (bv if bias else 0)).astype(np.int32).reshape(1, n_out)
    if per_channel:  # the reference reads only the first multiplier: compare per channel
        want = np.concatenate([
            ref.quantized_linear(t(x), t(w[c:c + 1]), None if bv is None else t(bv[c:c + 1]),
                                 None if ks is None else t(ks[:, c:c + 1]), -in_zp, 0, out_zp, [m[c]], [s[c]],
                                 act[1], act[0]).numpy() for c in range(n_out)], axis=-1)
    else:
        want = ref.quantized_linear(t(x), t(w), None if bv is None else t(bv), None if ks is None else t(ks), -in_zp,
                                    0, out_zp, m, s, act[1], act[0]).numpy()
    o = b.output(want, label=f"linear x={x_shape} n={n_out} bias={bias} kernel_sum={kernel_sum} pc={per_channel}")
    b.op("cortex_m::quantized_linear.out",
         [b.const(x), b.const(w), b.none() if bv is None or kernel_sum else b.const(bv),
          b.none() if ks is None else b.const(ks), b.int(-in_zp), b.int(0), b.int(out_zp), b.ints(m), b.ints(s),
          b.int(act[1]), b.int(act[0])], o)


def test_linear_and_batch_matmul():
    ref = reference()
    rng = np.random.default_rng(4)
    b = Batch()
    add_linear(b, rng, (1, 256), 10)  # MNIST classifier shape
    add_linear(b, rng, (3, 40), 7, bias=False)
    add_linear(b, rng, (2, 2, 33), 5, act=(-128, 0))
    add_linear(b, rng, (1, 640), 16, kernel_sum=True)  # MVE-style program
    add_linear(b, rng, (2, 17), 6, kernel_sum=True, bias=False)
    add_linear(b, rng, (2, 24), 9, per_channel=True)
    for (bs, rows, k, cols) in ((1, 4, 8, 3), (3, 5, 16, 7), (2, 1, 30, 1)):
        lhs, rhs = i8(rng, bs, rows, k), i8(rng, bs, cols, k)
        lz, rz, oz = int(rng.integers(-128, 128)), int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
        m, s = multiplier_shift(1.0 / (k * 2000))
        want = ref.quantized_batch_matmul(t(lhs), lz, t(rhs), rz, oz, m, s, torch.empty(0)).numpy()
        o = b.output(want, label=f"bmm {bs}x{rows}x{k}x{cols}")
        b.op("cortex_m::quantized_batch_matmul.out", [b.const(lhs), b.int(lz), b.const(rhs), b.int(rz), b.int(oz),
                                                      b.int(m), b.int(s), b.scratch()], o)
    b.run_and_check()


# -- elementwise ---------------------------------------------------------------

def add_quantized_add(b, rng, a_shape, b_shape, layout=CL, act=(-128, 127)):
    ref = reference()
    x, y = i8(rng, *a_shape), i8(rng, *b_shape)
    sx, sy, so = (float(v) for v in rng.uniform(0.01, 0.2, 3))
    # CMSIS-NN / TFLite add: inputs rescaled to 2 * max(sx, sy) with a 20-bit left shift
    twice_max = 2 * max(sx, sy)
    xm, xs = multiplier_shift(sx / twice_max)
    ym, ys = multiplier_shift(sy / twice_max)
    om, os_ = multiplier_shift(twice_max / ((1 << 20) * so))
    xz, yz, oz = (int(v) for v in rng.integers(-128, 128, 3))
    xt, yt = t(x), t(y)
    if len(a_shape) == 4:
        xt, yt = cl(xt), cl(yt)
    want = ref.quantized_add(xt, xz, xm, xs, yt, yz, ym, ys, oz, om, os_, act[0], act[1]).numpy()
    order = layout if len(a_shape) == 4 else None
    o = b.output(want, order if want.ndim == 4 else None, f"add {a_shape} + {b_shape}")
    b.op("cortex_m::quantized_add.out", [b.const(x, order if x.ndim == 4 else None), b.int(xz), b.int(xm), b.int(xs),
                                         b.const(y, order if y.ndim == 4 else None), b.int(yz), b.int(ym), b.int(ys),
                                         b.int(oz), b.int(om), b.int(os_), b.int(act[0]), b.int(act[1])], o)


def test_add_mul_min_max_div_activation():
    ref = reference()
    rng = np.random.default_rng(5)
    b = Batch()
    add_quantized_add(b, rng, (1, 8, 5, 5), (1, 8, 5, 5))
    add_quantized_add(b, rng, (2, 4, 3, 6), (2, 4, 3, 6), act=(0, 127))
    add_quantized_add(b, rng, (1, 6, 4, 4), (1, 6, 1, 1))  # channel broadcast
    add_quantized_add(b, rng, (1, 6, 1, 1), (1, 6, 4, 4))
    add_quantized_add(b, rng, (3, 7), (3, 7))
    for a_shape, b_shape in (((1, 8, 4, 4), (1, 8, 4, 4)), ((1, 5, 3, 3), (1, 5, 1, 1)), ((4, 9), (4, 9))):
        x, y = i8(rng, *a_shape), i8(rng, *b_shape)
        xz, yz, oz = (int(v) for v in rng.integers(-128, 128, 3))
        m, s = multiplier_shift(float(rng.uniform(0.002, 0.02)))
        order = CL if len(a_shape) == 4 else None
        xt, yt = (cl(t(x)), cl(t(y))) if order else (t(x), t(y))
        want = ref.quantized_mul(xt, xz, yt, yz, oz, m, s).numpy()
        o = b.output(want, order, f"mul {a_shape} * {b_shape}")
        b.op("cortex_m::quantized_mul.out", [b.const(x, order), b.int(xz), b.const(y, order), b.int(yz), b.int(oz),
                                             b.int(m), b.int(s)], o)
        for name in ("minimum", "maximum"):
            want = getattr(ref, name)(xt, yt).numpy()
            o = b.output(want, order, f"{name} {a_shape} {b_shape}")
            b.op(f"cortex_m::{name}.out", [b.const(x, order), b.const(y, order)], o)
    # scalar-like operand (one element)
    x, y = i8(rng, 2, 5), i8(rng, 1)
    o = b.output(ref.maximum(t(x), t(y)).numpy(), label="maximum with a one-element tensor")
    b.op("cortex_m::maximum.out", [b.const(x), b.const(y)], o)
    # division (float32 in the reference), with zero divisors
    for shape in ((3, 17), (1, 4, 3, 3)):
        x, y = i8(rng, *shape), i8(rng, *shape)
        xz, yz, oz = int(rng.integers(-20, 20)), int(rng.integers(-20, 20)), int(rng.integers(-128, 128))
        y.flat[:5] = yz
        scale = float(rng.uniform(0.5, 30))
        order = CL if len(shape) == 4 else None
        xt, yt = (cl(t(x)), cl(t(y))) if order else (t(x), t(y))
        want = ref.quantized_div(xt, xz, yt, yz, oz, scale).numpy()
        o = b.output(want, order, f"div {shape}")
        b.op("cortex_m::quantized_div.out", [b.const(x, order), b.int(xz), b.const(y, order), b.int(yz), b.int(oz),
                                             b.float(scale)], o)
    # LUT activation, built as ExecuTorch builds it (sigmoid-like table here)
    lut = np.clip(np.round(255 / (1 + np.exp(-np.arange(-128, 128) / 20.0))) - 128, -128, 127).astype(np.int8)
    x = i8(rng, 1, 3, 4, 4)
    o = b.output(ref.quantized_activation(cl(t(x)), t(lut)).numpy(), CL, "activation")
    b.op("cortex_m::quantized_activation.out", [b.const(x, CL), b.const(lut)], o)
    b.run_and_check()


# Requantization parameters of quantized_add: (x_zp, x_mult, x_shift, y_zp, y_mult, y_shift, out_zp, out_mult,
# out_shift, act_min, act_max). The kernel's equal-shape loop takes its 32-bit form where the parameters allow
# it and the 64-bit requantize() elsewhere; both must equal the reference on every pair of int8 values.
ADD_PARAMS = [
    (48, 1914037969, -1, -128, 1 << 30, 0, -128, 1245815954, -18, -128, 127),  # ResNet-8's first residual add
    (-12, 1791737233, -1, -13, 1 << 30, 0, -128, 1644482768, -18, -128, 127),
    # small multipliers: a = round(x / 2), b = round(y / 4), then round(round(sum / 2) / 2): ties of both signs
    # at every stage (a multiplier of 2^11 cancels the 20-bit shift and the doubling)
    (0, 2048, -1, 0, 2048, -2, 0, 1 << 30, -1, -128, 127),
    (5, 2048, 1, -3, 6144, -3, 2, 3 << 29, -2, -128, 127),  # with a left shift
    (-256, 2**31 - 1, 1, 256, 2**31 - 1, 2, 5, 2**31 - 1, -31, -100, 90),  # left shifts 1, 2 (32-bit form)
    (3, 1 << 30, 3, -7, 1 << 30, -31, -3, 1 << 30, 0, -128, 127),  # a left shift of 3: 64-bit form
    (100, -(2**31), 0, -100, -(2**31), -5, 0, -(2**31), -20, -128, 127),  # INT32_MIN multipliers
    (17, 1518500250, -40, -17, 1518500250, -2, 9, 1 << 30, -40, -128, 127),  # right shifts > 31: 64-bit form
    (-5, 1073741825, -4, 11, 2**31 - 1, -9, 1, 1 << 30, 2, -128, 127),  # output left shift: 64-bit form
    (0, 1 << 30, -31, 1, 2**31 - 1, -31, -128, 2**31 - 1, 0, 0, 0),  # one output value
]


def all_pairs(shape=(256, 256)):
    """x and y holding every pair of int8 values once (x[i, j] = i - 128, y[i, j] = j - 128), as `shape`."""
    x, y = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    return x.astype(np.int8).reshape(shape), y.astype(np.int8).reshape(shape)


@pytest.mark.parametrize("params", ADD_PARAMS, ids=[f"add{i}" for i in range(len(ADD_PARAMS))])
def test_quantized_add_equal_shapes_every_pair(params):
    """The equal-shape loop of quantized_add on all 65,536 pairs of int8 values, 2-D and channels-last
    (one order for all three), against the integer reference and ExecuTorch's."""
    from mcu_gen.reference import integer

    xz, xm, xs, yz, ym, ys, oz, om, os_, lo, hi = params
    b = Batch()
    for shape, order in (((256, 256), None), ((1, 16, 64, 64), CL)):
        x, y = all_pairs(shape)
        want = integer.quantized_add(x, xz, xm, xs, y, yz, ym, ys, oz, om, os_, lo, hi)
        xt, yt = (cl(t(x)), cl(t(y))) if order else (t(x), t(y))
        theirs = reference().quantized_add(xt, xz, xm, xs, yt, yz, ym, ys, oz, om, os_, lo, hi).numpy()
        np.testing.assert_array_equal(want, theirs)
        o = b.output(want, order, f"add {shape} {params}")
        b.op("cortex_m::quantized_add.out", [b.const(x, order), b.int(xz), b.int(xm), b.int(xs), b.const(y, order),
                                             b.int(yz), b.int(ym), b.int(ys), b.int(oz), b.int(om), b.int(os_),
                                             b.int(lo), b.int(hi)], o)
    b.run_and_check()


@pytest.mark.parametrize("over", [0, 4])
def test_quantized_add_in_place(over):
    """The output over one operand (the planner's binary_same rule), every pair of int8 values; and the
    broadcast path (a [1, C, 1, 1] operand, another dim_order) in the same program."""
    from mcu_gen.reference import integer

    params = ADD_PARAMS[0]
    xz, xm, xs, yz, ym, ys, oz, om, os_, lo, hi = params
    p = Program()
    x_i = p.add_tensor((256, 256), "int8")
    y_i = p.add_tensor((256, 256), "int8")
    o_i = p.add_tensor((256, 256), "int8")
    ints = [p.add_scalar("int", v) for v in params]
    rng = np.random.default_rng(8)
    bx, by = i8(rng, 1, 6, 4, 4), i8(rng, 1, 6, 1, 1)
    bo = p.add_tensor((1, 6, 4, 4), "int8", dim_order=CL)
    p.instructions.append(Instruction("cortex_m::quantized_add.out", [  # first: its output is live while x is
        p.add_tensor(bx.shape, "int8", dim_order=CL, data=np.ascontiguousarray(bx.transpose(CL))), *ints[0:3],
        p.add_tensor(by.shape, "int8", data=by), *ints[3:], bo, bo]))
    p.instructions.append(Instruction("cortex_m::quantized_add.out", [x_i, *ints[0:3], y_i, *ints[3:], o_i, o_i]))
    p.inputs, p.outputs = [x_i, y_i], [bo, o_i]
    from mcu_gen.plan import planner

    planner.plan(p)
    operand = x_i if over == 0 else y_i
    p.tensor(o_i).offset = p.tensor(operand).offset  # as binary_same places it
    x, y = all_pairs()
    got_b, got = run_on_host(p, [x, y])
    want = integer.quantized_add(x, xz, xm, xs, y, yz, ym, ys, oz, om, os_, lo, hi)
    np.testing.assert_array_equal(got.reshape(256, 256), want)
    want_b = integer.quantized_add(bx, xz, xm, xs, by, yz, ym, ys, oz, om, os_, lo, hi)
    np.testing.assert_array_equal(got_b.reshape(1, 4, 4, 6).transpose(0, 3, 1, 2), want_b)


# -- pooling, softmax, shape ops -----------------------------------------------------

def avg_pool_integer(x, k, s, p, ceil):
    """CMSIS-NN's arm_avgpool_s8 arithmetic (docs/int8.md), NCHW int8: the sum of the raw
    values inside the input over their count, rounded half away from zero. Also returns
    where the exact mean is a tie (x.5), the only places ExecuTorch's float reference differs."""
    n, c, h, w = x.shape
    oh = torch.nn.functional.avg_pool2d(torch.zeros(1, 1, h, w), k, s, p, ceil_mode=ceil).shape[2]
    ow = torch.nn.functional.avg_pool2d(torch.zeros(1, 1, h, w), k, s, p, ceil_mode=ceil).shape[3]
    out = np.zeros((n, c, oh, ow), np.int8)
    ties = np.zeros((n, c, oh, ow), bool)
    for i in range(oh):
        h0, h1 = max(i * s[0] - p[0], 0), min(i * s[0] - p[0] + k[0], h)
        for j in range(ow):
            w0, w1 = max(j * s[1] - p[1], 0), min(j * s[1] - p[1] + k[1], w)
            total = x[:, :, h0:h1, w0:w1].astype(np.int64).sum(axis=(2, 3))
            count = (h1 - h0) * (w1 - w0)
            q = np.where(total > 0, (total + count // 2) // count, -((-total + count // 2) // count))
            out[:, :, i, j] = np.clip(q, -128, 127)
            ties[:, :, i, j] = (2 * total) % (2 * count) == count
    return out, ties


def test_pools():
    ref = reference()
    rng = np.random.default_rng(6)
    b = Batch()
    for x_shape, k, s, p, ceil, nhwc in (((1, 8, 28, 28), (2, 2), (2, 2), (0, 0), False, False),
                                         ((1, 64, 25, 5), (25, 5), (25, 5), (0, 0), False, False),  # KWS global pool
                                         ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), False, False),
                                         ((1, 4, 7, 7), (3, 3), (2, 2), (0, 0), True, False),
                                         ((1, 5, 6, 5), (2, 3), (1, 2), (1, 1), True, True)):
        x = i8(rng, *x_shape)
        zp = int(rng.integers(-128, 128))
        m, sh = multiplier_shift(float(rng.uniform(0.01, 0.5)))
        theirs = ref.quantized_avg_pool2d(cl(t(x)), list(k), list(s), list(p), ceil, zp, m, sh, torch.empty(0)).numpy()
        want, ties = avg_pool_integer(x, k, s, p, ceil)
        # The integer rounding (CMSIS-NN's, which the kernel follows) differs
        # from ExecuTorch's float reference only where the mean is a tie.
        assert np.array_equal(want[~ties], theirs[~ties])
        label = f"avg_pool x={x_shape} k={k} s={s} p={p} ceil={ceil}"
        if nhwc:
            xi, o, name = b.const(x.transpose(0, 2, 3, 1)), b.output(want.transpose(0, 2, 3, 1), label=label), \
                "cortex_m::quantized_avg_pool2d_nhwc.out"
        else:
            xi, o, name = b.const(x, CL), b.output(want, CL, label), "cortex_m::quantized_avg_pool2d.out"
        b.op(name, [xi, b.ints(k), b.ints(s), b.ints(p), b.bool(ceil), b.int(zp), b.int(m), b.int(sh), b.scratch()],
             o)
    for x_shape, k, s, p, act, nhwc in (((1, 8, 28, 28), (2, 2), (2, 2), (0, 0), (-128, 127), False),
                                        ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (-10, 127), False),
                                        ((1, 4, 5, 7), (3, 2), (1, 2), (1, 1), (-128, 50), True)):
        x = i8(rng, *x_shape)
        zp = int(rng.integers(-128, 128))
        want = ref.quantized_max_pool2d(cl(t(x)), list(k), list(s), list(p), [1, 1], False, zp, zp, *act).numpy()
        label = f"max_pool x={x_shape} k={k} s={s} p={p}"
        if nhwc:
            xi, o, name = b.const(x.transpose(0, 2, 3, 1)), b.output(want.transpose(0, 2, 3, 1), label=label), \
                "cortex_m::quantized_max_pool2d_nhwc.out"
        else:
            xi, o, name = b.const(x, CL), b.output(want, CL, label), "cortex_m::quantized_max_pool2d.out"
        b.op(name, [xi, b.ints(k), b.ints(s), b.ints(p), b.ints([1, 1]), b.bool(False), b.int(zp), b.int(zp),
                    b.int(act[0]), b.int(act[1])], o)
    b.run_and_check()


def test_softmax():
    """The reference is float32 torch.softmax (vectorised exp): one step of
    difference is allowed where p * 256 sits on a rounding boundary."""
    ref = reference()
    rng = np.random.default_rng(7)
    b = Batch()
    for shape, dim in (((4, 10), -1), ((3, 100), 1), ((2, 5, 7), 1), ((1, 12), 0)):
        x = i8(rng, *shape)
        zp = int(rng.integers(-128, 128))
        scale = float(rng.uniform(0.02, 0.2))
        m, s = multiplier_shift(scale * (1 << 26))
        want = ref.softmax(t(x), dim, zp, -128, m, s, -1000).numpy()
        o = b.output(want, label=f"softmax {shape} dim={dim}")
        b.op("cortex_m::softmax.out", [b.const(x), b.int(dim), b.int(zp), b.int(-128), b.int(m), b.int(s),
                                       b.int(-1000)], o)
    total = same = 0
    for got, (want, _, label) in zip(b.run(), b.expected):
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.max() <= 1, label
        total += diff.size
        same += int((diff == 0).sum())
    assert same >= 0.99 * total


def test_pad_and_transpose():
    ref = reference()
    rng = np.random.default_rng(8)
    b = Batch()
    # channels-last input: pads in (N, H, W, C) order
    x = i8(rng, 1, 3, 4, 5)
    pre, post = [0, 1, 2, 0], [0, 2, 0, 1]
    want = ref.pad(cl(t(x)), pre, post, -7).numpy()
    o = b.output(want, CL, "pad channels-last")
    b.op("cortex_m::pad.out", [b.const(x, CL), b.ints(pre), b.ints(post), b.int(-7)], o)
    # zero-width pad (ExecuTorch emits these before avg_pool2d)
    o = b.output(x, CL, "pad nothing")
    b.op("cortex_m::pad.out", [b.const(x, CL), b.ints([0] * 4), b.ints([0] * 4), b.int(0)], o)
    # contiguous 3-D input: logical order, right-aligned
    x = i8(rng, 2, 3, 4)
    pre, post = [0, 1, 0, 2], [0, 0, 3, 1]
    want = ref.pad(t(x), pre, post, 127).numpy()
    o = b.output(want, label="pad 3-D")
    b.op("cortex_m::pad.out", [b.const(x), b.ints(pre), b.ints(post), b.int(127)], o)
    # transpose: contiguous and channels-last inputs
    for shape, perm, order in (((2, 3, 4), (2, 0, 1), None), ((1, 4, 3, 5), (0, 2, 3, 1), CL),
                               ((1, 4, 3, 5), (0, 3, 1, 2), None), ((6, 7), (1, 0), None)):
        x = i8(rng, *shape)
        xt = cl(t(x)) if order else t(x)
        want = ref.transpose(xt, list(perm)).numpy()
        o = b.output(want, label=f"transpose {shape} {perm}")
        b.op("cortex_m::transpose.out", [b.const(x, order), b.ints(perm)], o)
    b.run_and_check()


# -- property test: random conv / linear geometry and quantization -----------------------

@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), extreme=st.booleans())
def test_random_conv_depthwise_linear(seed, extreme):
    """Random shapes, strides, paddings, zero points (extremes included) and
    per-channel requantization, several cases per native run."""
    rng = np.random.default_rng(seed)
    b = Batch()
    for _ in range(3):
        cin, cout = int(rng.integers(1, 6)), int(rng.integers(4, 9))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        h = int(rng.integers(dh * (kh - 1) + 1, 10))
        w = int(rng.integers(dw * (kw - 1) + 1, 10))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        padding = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        zps = dict(in_zp=-128, out_zp=127) if extreme else {}
        add_conv(b, rng, (1, cin, h, w), (cout, kh, kw, cin), stride, padding, (dh, dw), bool(rng.integers(2)),
                 nhwc=bool(rng.integers(2)), **zps)
        add_depthwise(b, rng, (1, cin, h, w), (kh, kw), dm=int(rng.integers(1, 3)), stride=stride, padding=padding,
                      dilation=(dh, dw))
        add_linear(b, rng, (int(rng.integers(1, 3)), int(rng.integers(1, 50))), cout,
                   kernel_sum=bool(rng.integers(2)), per_channel=bool(rng.integers(2)))
    b.run_and_check()


# -- rejection -----------------------------------------------------------------

def test_rejects_bad_arguments():
    rng = np.random.default_rng(9)
    b = Batch()
    x = i8(rng, 1, 3, 5, 5)
    w = i8(rng, 4, 3, 3, 3)
    m, s = requant_params(rng, 4, edge=False)
    # contiguous (NCHW) input where the operator needs channels-last
    o = b.output(np.zeros((1, 4, 3, 3), np.int8), CL)
    b.op("cortex_m::quantized_conv2d.out", [b.const(x), b.const(w), b.none(), b.ints([1, 1]), b.ints([0, 0]),
                                            b.ints([1, 1]), b.int(0), b.int(0), b.const(m), b.const(s), b.int(-128),
                                            b.int(127), b.scratch()], o)
    with pytest.raises(HostRunError, match="KernelFailed"):
        b.run()


@pytest.mark.parametrize("board", ["mps3-an547", "mps2-an505", "mps2-an386"])
def test_avg_pool_vector_paths_on_qemu(qemu_tools, tmp_path, board):
    """The average pool's MVE path (kernels_portable/int8_pool.h: 16 channels per pass, the loads
    predicated past the last channel) on QEMU mps3-an547, and its DSP path (8, then 4 channels per pass in
    16-bit lanes, flushed every 255 pixels; a window of whole rows as one run) on the Cortex-M33 and M4: bit-exact with the integer reference, for
    channel counts that are and are not multiples of 16 (and 4), padding, strides, ceil_mode, windows of more
    than 255 pixels, and one of 256 (the MVE path's int16 sums) at -128 and 127."""
    from mcu_gen.device.runner import run
    from mcu_gen.plan import planner
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program, TensorValue

    nhwc = (0, 2, 3, 1)
    p = Program()
    rng = np.random.default_rng(8)
    for x_shape, k, s, pad, ceil in (((1, 20, 7, 6), (3, 3), (2, 2), (1, 1), False),
                                     ((1, 64, 25, 5), (25, 5), (25, 5), (0, 0), False),  # KWS's global pool
                                     ((1, 5, 6, 5), (2, 3), (1, 2), (1, 1), True),
                                     ((1, 37, 4, 4), (2, 2), (2, 2), (0, 0), False),
                                     ((1, 8, 20, 16), (20, 16), (20, 16), (0, 0), False),  # 320 pixels
                                     ((1, 12, 30, 9), (30, 9), (30, 9), (0, 0), False),  # 270: 8 + 4 channels
                                     ((1, 6, 9, 3), (3, 3), (2, 1), (1, 0), False),  # whole rows, clipped
                                     ((1, 24, 16, 16), (16, 16), (16, 16), (0, 0), False),  # 256: int16 sums (MVE)
                                     ((1, 24, 16, 16), (16, 16), (16, 16), (0, 0), False)):  # the same, all -128
        oh = torch.nn.functional.avg_pool2d(torch.zeros(1, 1, *x_shape[2:]), k, s, pad, ceil_mode=ceil).shape[2:]
        x = p.add(TensorValue(x_shape, "int8", dim_order=nhwc, scale=0.1, zero_point=3))
        out = p.add(TensorValue((1, x_shape[1], *oh), "int8", dim_order=nhwc, scale=0.1, zero_point=3))
        m, sh = multiplier_shift(float(rng.uniform(0.01, 0.5)))
        args = [x, p.add_scalar("int_list", list(k)), p.add_scalar("int_list", list(s)),
                p.add_scalar("int_list", list(pad)), p.add_scalar("bool", ceil), p.add_scalar("int", 3),
                p.add_scalar("int", m), p.add_scalar("int", sh), p.add(TensorValue((16,), "uint8")), out, out]
        p.instructions.append(Instruction("cortex_m::quantized_avg_pool2d.out", args))
        p.inputs.append(x)
        p.outputs.append(out)
    planner.plan(p)
    path = tmp_path / "pools.pte"
    path.write_bytes(pte.write(p))
    inputs = [rng.integers(-128, 128, p.tensor(i).shape).astype(np.int8) for i in p.inputs]
    inputs[-1][:] = -128  # the largest window of int16 sums at its extreme: 256 x -128 = -32768
    inputs[-2][:, :8] = 127  # and at the other for 8 channels (+ random ones)
    r = run(pte_path=path, board=board, out=tmp_path / board, inputs=[inputs], backend="portable")
    assert r.verified and r.bit_exact, r


@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
def test_activation_table_word_path_on_qemu(qemu_tools, tmp_path, board):
    """The table activation's four-codes-a-word path (kernels_portable/op_cortex_m_quantized_activation.cpp, Arm
    cores with unaligned access) and its byte tail on QEMU: every code of -128..127 looked up, at counts 1 to 3 past a
    multiple of 4 and of 1, bit-exact with the table."""
    from mcu_gen.device.runner import run
    from mcu_gen.plan import planner
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program, TensorValue

    p = Program()
    rng = np.random.default_rng(21)
    lut = rng.integers(-128, 128, 256).astype(np.int8)
    for shape, order in (((1, 3, 5, 7), (0, 2, 3, 1)), ((259,), None), ((1,), None), ((1, 6, 43), None)):
        x = p.add(TensorValue(shape, "int8", dim_order=order, scale=0.1, zero_point=0))
        out = p.add(TensorValue(shape, "int8", dim_order=order, scale=0.1, zero_point=0))
        table = p.add(TensorValue((256,), "int8", data=lut))
        p.instructions.append(Instruction("cortex_m::quantized_activation.out", [x, table, out, out]))
        p.inputs.append(x)
        p.outputs.append(out)
    planner.plan(p)
    path = tmp_path / "tables.pte"
    path.write_bytes(pte.write(p))
    inputs = [rng.integers(-128, 128, p.tensor(i).shape).astype(np.int8) for i in p.inputs]
    inputs[1][:256] = np.arange(-128, 128)
    r = run(pte_path=path, board=board, out=tmp_path / board, inputs=[inputs], backend="portable")
    assert r.verified and r.bit_exact, r
    assert r.bit_exact and all(np.array_equal(lut[x.astype(np.int16) + 128], y)
                               for x, y in zip(inputs, r.outputs[0])), "outputs differ from the table"


def test_transpose_cases():
    """cortex_m::transpose.out over ranks 0-5, dims of size 1, input and output dim orders, a channel shuffle's
    [H, W, 2, C / 2] -> [H, W, C / 2, 2] (rows of 2 in tiles of C / 2 rows) and a plain NCHW -> NHWC: out equals
    numpy's transpose of the logical input, byte for byte."""
    rng = np.random.default_rng(7)
    b = Batch()
    cases = [((), (), None, None), ((5,), (0,), None, None), ((3, 4), (1, 0), None, None),
             ((4, 4, 2, 24), (0, 1, 3, 2), None, None), ((1, 16, 8, 8), (0, 2, 3, 1), None, None),
             ((1, 8, 6, 6), (0, 1, 2, 3), CL, None), ((1, 8, 6, 6), (0, 1, 2, 3), None, CL),
             ((2, 1, 3, 1, 5), (4, 1, 0, 3, 2), None, None), ((1, 3, 1, 7), (0, 3, 2, 1), CL, CL),
             ((6, 1), (1, 0), None, None), ((2, 3, 4), (2, 0, 1), (1, 2, 0), (2, 0, 1))]
    for shape, perm, in_order, out_order in cases:
        x = i8(rng, *shape) if shape else np.array(5, np.int8)
        want = np.transpose(x, perm)
        xi = b.const(x, in_order)
        o = b.output(want, out_order, label=f"transpose {shape} {perm} in {in_order} out {out_order}")
        b.op("cortex_m::transpose.out", [xi, b.ints(perm)], o)
    b.run_and_check()
