"""The host int8 reference (mcu_gen/reference/integer.py) against ExecuTorch's own Python
reference implementations of the cortex_m:: operators (backends/cortex_m/ops/operators.py),
op by op, on random data: the outputs must be identical.

Importing ExecuTorch's Cortex-M backend normally needs tosa_serializer (research F1). Only
operators.py is needed here, so it is loaded on its own with its two helper modules
(passes_utils.py loaded from its file, the softmax constants given directly).
"""
import importlib.util
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from mcu_gen.reference import integer as R
from mcu_gen.quantize.lowering import add_params, quantize_multiplier, softmax_params


def _load_et_operators():
    if hasattr(torch.ops, "cortex_m") and hasattr(torch.ops.cortex_m, "quantized_add"):
        return torch.ops.cortex_m  # already registered in this process
    try:
        import executorch
    except ImportError:
        pytest.skip("executorch is not installed")
    root = Path(list(executorch.__path__)[0]) / "backends" / "cortex_m"

    def load(name, path):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    pkg = "executorch.backends.cortex_m"
    try:
        import executorch.backends.cortex_m.passes.passes_utils  # noqa: F401  (works when tosa is installed)
        import executorch.backends.cortex_m.quantizer.quantization_configs  # noqa: F401
        import executorch.backends.cortex_m.ops.operators  # noqa: F401  (registers torch.ops.cortex_m)

        return torch.ops.cortex_m
    except Exception:
        for sub in ("passes", "quantizer"):
            name = f"{pkg}.{sub}"
            if name not in sys.modules or not hasattr(sys.modules[name], "__path__"):
                m = types.ModuleType(name)
                m.__path__ = [str(root / sub)]
                sys.modules[name] = m
        load(f"{pkg}.passes.passes_utils", root / "passes" / "passes_utils.py")
        qc = types.ModuleType(f"{pkg}.quantizer.quantization_configs")
        qc.CMSIS_SOFTMAX_SCALE, qc.CMSIS_SOFTMAX_ZERO_POINT = 1.0 / 256.0, -128
        sys.modules[qc.__name__] = qc
    load(f"{pkg}.ops.operators", root / "ops" / "operators.py")
    return torch.ops.cortex_m


@pytest.fixture(scope="module")
def et():
    return _load_et_operators()


RNG = np.random.RandomState(0)


def _i8(*shape):
    return RNG.randint(-128, 128, size=shape).astype(np.int8)


def _mults(n, lo=1e-4, hi=0.5):
    pairs = [quantize_multiplier(float(s)) for s in np.exp(RNG.uniform(math.log(lo), math.log(hi), n))]
    return np.array([p[0] for p in pairs], np.int32), np.array([p[1] for p in pairs], np.int32)


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def test_quantize_multiplier_round_trip():
    for real in (1e-6, 0.0003, 0.25, 0.5, 0.999999999, 1.0, 3.7, 1234.5):
        m, s = quantize_multiplier(real)
        assert (1 << 30) <= m < (1 << 31)
        assert abs(m * 2.0 ** s / 2 ** 31 - real) <= real * 2 ** -30
    assert quantize_multiplier(0.0) == (0, 0)


def test_requantize_matches_executorch(et):
    from executorch.backends.cortex_m.passes.passes_utils import requantize_cmsis

    acc = RNG.randint(-(2 ** 24), 2 ** 24, size=2000).astype(np.int32)
    for real in (1e-5, 0.00390625, 0.0123, 0.4999, 0.75, 2.5):
        m, s = quantize_multiplier(real)
        want = requantize_cmsis(_t(acc), m, s).numpy()
        assert np.array_equal(R.requantize(acc, m, s), want)


@pytest.mark.parametrize("cin,cout,k,stride,pad", [(1, 8, 3, 1, 0), (3, 16, 3, 2, 1), (8, 4, 1, 1, 0),
                                                    (1, 64, (10, 4), 2, (5, 1))])
def test_conv2d(et, cin, cout, k, stride, pad):
    kh, kw = (k, k) if isinstance(k, int) else k
    stride, pad = [stride] * 2, list(pad) if isinstance(pad, tuple) else [pad] * 2
    x = _i8(1, cin, 12, 9)
    w = RNG.randint(-127, 128, size=(cout, kh, kw, cin)).astype(np.int8)  # OHWI
    b = RNG.randint(-5000, 5000, size=cout).astype(np.int32)
    m, s = _mults(cout, 1e-4, 0.02)
    args = (stride, pad, [1, 1], 7, -3, m, s, -100, 120)
    got = R.quantized_conv2d(x, w, b, *args)
    want = et.quantized_conv2d(_t(x).to(memory_format=torch.channels_last), _t(w), _t(b), stride, pad, [1, 1], 7, -3,
                               _t(m), _t(s), -100, 120, torch.empty(0, dtype=torch.int8))
    assert np.array_equal(got, want.contiguous().numpy())


@pytest.mark.parametrize("c,mult,stride,pad", [(8, 1, 1, 1), (16, 2, 2, 0)])
def test_depthwise_conv2d(et, c, mult, stride, pad):
    x = _i8(1, c, 10, 7)
    w = RNG.randint(-127, 128, size=(1, 3, 3, c * mult)).astype(np.int8)  # IHWO
    b = RNG.randint(-3000, 3000, size=c * mult).astype(np.int32)
    m, s = _mults(c * mult, 1e-3, 0.05)
    got = R.quantized_depthwise_conv2d(x, w, b, [stride] * 2, [pad] * 2, [1, 1], mult, 128, -128, m, s, -128, 127)
    want = et.quantized_depthwise_conv2d(_t(x), _t(w), _t(b), [stride] * 2, [pad] * 2, [1, 1], mult, 128, -128,
                                         _t(m), _t(s), -128, 127, torch.empty(0, dtype=torch.int8))
    assert np.array_equal(got, want.contiguous().numpy())


def test_linear(et):
    x = _i8(3, 40)
    w = RNG.randint(-127, 128, size=(10, 40)).astype(np.int8)
    b = RNG.randint(-4000, 4000, size=10).astype(np.int32)
    m, s = quantize_multiplier(0.0031)
    got = R.quantized_linear(x, w, b, None, 11, 0, -9, [m], [s], 127, -128)
    want = et.quantized_linear(_t(x), _t(w), _t(b), None, 11, 0, -9, [m], [s], 127, -128)
    assert np.array_equal(got, want.numpy())
    ks = (b.astype(np.int64) + 11 * w.astype(np.int64).sum(axis=1)).astype(np.int32)
    got_ks = R.quantized_linear(x, w, None, ks, 11, 0, -9, [m], [s], 127, -128)
    assert np.array_equal(got_ks, got)


def test_add(et):
    a, b = _i8(1, 16, 6, 6), _i8(1, 16, 6, 6)
    (m1, s1), (m2, s2), (mo, so) = add_params(0.02, 0.035, 0.05)
    got = R.quantized_add(a, -3, m1, s1, b, 5, m2, s2, -7, mo, so, -7, 127)
    want = et.quantized_add(_t(a), -3, m1, s1, _t(b), 5, m2, s2, -7, mo, so, -7, 127)
    assert np.array_equal(got, want.numpy())


def test_max_pool(et):
    x = _i8(1, 8, 13, 11)
    got = R.quantized_max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False, 4, 4, -20, 127)
    want = et.quantized_max_pool2d(_t(x), [2, 2], [2, 2], [0, 0], [1, 1], False, 4, 4, -20, 127)
    assert np.array_equal(got, want.contiguous().numpy())


@pytest.mark.parametrize("kernel,pad", [((25, 5), 0), ((8, 8), 0), ((3, 3), 1)])
def test_avg_pool(et, kernel, pad):
    x = _i8(1, 16, 25, 10) if kernel == (25, 5) else _i8(1, 16, 8, 8)
    m, s = quantize_multiplier(0.0181)
    got = R.quantized_avg_pool2d(x, list(kernel), list(kernel), [pad] * 2, False, -11, m, s)
    want = et.quantized_avg_pool2d(_t(x), list(kernel), list(kernel), [pad] * 2, False, -11, m, s,
                                   torch.empty(0, dtype=torch.int8)).numpy()
    # Integer, as CMSIS-NN: equal to ExecuTorch's float reference except where the mean
    # is exactly halfway, where CMSIS-NN (and we) round away from zero, ExecuTorch to even.
    xt = torch.from_numpy(x.astype(np.float64))
    sums = torch.nn.functional.avg_pool2d(xt, kernel, kernel, pad, count_include_pad=False, divisor_override=1)
    counts = torch.nn.functional.avg_pool2d(torch.ones_like(xt), kernel, kernel, pad, count_include_pad=False,
                                            divisor_override=1)
    mean = (sums / counts).numpy()
    tie = np.abs(mean - np.trunc(mean)) == 0.5
    assert np.array_equal(got[~tie], want[~tie])
    assert np.array_equal(got[tie], (np.trunc(mean) + np.sign(mean))[tie].astype(np.int8))


def test_softmax(et):
    x = _i8(4, 12)
    m, s, diff_min = softmax_params(0.07)
    got = R.softmax(x, -1, 3, -128, m, s, diff_min)
    want = et.softmax(_t(x), -1, 3, -128, m, s, diff_min)
    assert np.array_equal(got, want.numpy())


def test_quantize_dequantize_match_pt2e():
    x = RNG.randn(1000).astype(np.float32) * 3
    for scale, zp in ((0.0261, -10), (0.0039, 0), (1 / 256, -128)):
        want = torch.ops.quantized_decomposed.quantize_per_tensor(_t(x), scale, zp, -128, 127, torch.int8)
        q = R.quantize_f32(x, scale, zp)
        assert np.array_equal(q, want.numpy())
        back = torch.ops.quantized_decomposed.dequantize_per_tensor(want, scale, zp, -128, 127, torch.int8)
        assert np.array_equal(R.dequantize_f32(q, scale, zp), back.numpy())


@pytest.mark.parametrize("op,weight_shape,extra", [
    ("quantized_conv2d", (6, 3, 3, 4), []),                 # OHWI
    ("quantized_depthwise_conv2d", (1, 3, 3, 4), [1]),      # IHWO, depth multiplier 1
])
def test_nhwc_forms_compute_what_the_plain_ones_do(op, weight_shape, extra):
    """The *_nhwc operators take logically NHWC activations; the reference must give the same
    numbers as the plain operator on the same memory."""
    from mcu_gen.program.ir import Instruction, Program

    rng = np.random.RandomState(5)
    x_nchw = _i8(1, 4, 7, 6)
    cout = weight_shape[0] if op == "quantized_conv2d" else weight_shape[3]
    w = rng.randint(-127, 128, size=weight_shape).astype(np.int8)
    bias = rng.randint(-500, 500, size=(cout,)).astype(np.int32)
    mults = np.array([quantize_multiplier(0.004)[0]] * cout, np.int32)
    shifts = np.array([quantize_multiplier(0.004)[1]] * cout, np.int32)

    def run(nhwc):
        p = Program()
        shape = (1, 7, 6, 4) if nhwc else (1, 4, 7, 6)
        x = p.add_tensor(shape, "int8", dim_order=None if nhwc else (0, 2, 3, 1))
        args = [x, p.add_tensor(w.shape, "int8", data=w), p.add_tensor(bias.shape, "int32", data=bias)]
        args += [p.add_scalar("int_list", [1, 1]), p.add_scalar("int_list", [1, 1]), p.add_scalar("int_list", [1, 1])]
        args += [p.add_scalar("int", e) for e in extra]
        args += [p.add_scalar("int", 3), p.add_scalar("int", -2)]
        args += [p.add_tensor(mults.shape, "int32", data=mults), p.add_tensor(shifts.shape, "int32", data=shifts)]
        args += [p.add_scalar("int", -128), p.add_scalar("int", 127), p.add_tensor((0,), "int8")]
        out_shape = (1, 7, 6, cout) if nhwc else (1, cout, 7, 6)
        y = p.add_tensor(out_shape, "int8", dim_order=None if nhwc else (0, 2, 3, 1))
        p.instructions.append(Instruction(f"cortex_m::{op}{'_nhwc' if nhwc else ''}.out", args + [y, y]))
        p.inputs, p.outputs = [x], [y]
        inp = x_nchw.transpose(0, 2, 3, 1) if nhwc else x_nchw
        (out,) = R.run_int8_reference(p, [np.ascontiguousarray(inp)])
        return out.transpose(0, 3, 1, 2) if nhwc else out

    assert np.array_equal(run(True), run(False))


def test_lookup_table_outside_the_function_domain_clamps_without_a_warning():
    """rsqrt over int8 codes that include 0 (a GCN's degree normalisation): inf is clamped to the top code, and
    numpy's overflow warning (inf * 1/scale) is not shown to the user."""
    import warnings

    import torch

    from mcu_gen.quantize.int8_common import activation_lut

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lut = activation_lut(torch.ops.aten.rsqrt.default, (), {}, 0.02, -128, 0.0028, -128)
    assert lut[0] == 127  # code -128 is 0.0: rsqrt(0) = inf
    assert lut[255] == int(np.clip(np.round(np.float32(1 / np.sqrt(np.float32(255 * 0.02))) / np.float32(0.0028)) - 128,
                                   -128, 127))
