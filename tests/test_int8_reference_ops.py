"""The int8 operators the lowering now emits for real models (issue 14), each run by the portable
kernel natively on the host (mcu_gen.host, ASan/UBSan) and by the host integer reference
(mcu_gen.quantize.reference) on generated shapes and quantization parameters: identical bytes.
Then every model of tests/models_int8 end to end on the host: the whole int8 program, kernels
against the reference."""
from pathlib import Path

import numpy as np
import pytest

from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction, Program
from mcu_gen.quantize.lowering import quantize_multiplier
from mcu_gen.reference.integer import run_int8_reference

NHWC = (0, 2, 3, 1)


class Case:
    """One-instruction programs on constant inputs: kernel (host) vs integer reference."""

    def __init__(self):
        self.p = Program()
        self.inputs = []  # logical arrays of the program inputs

    def const(self, arr, dim_order=None):
        """A constant; a channels-last operand is a program input (bytes in memory order)."""
        arr = np.asarray(arr)
        if dim_order is None:
            return self.p.add_tensor(arr.shape, str(arr.dtype), data=np.ascontiguousarray(arr))
        i = self.p.add_tensor(arr.shape, str(arr.dtype), dim_order=dim_order)
        self.p.inputs.append(i)
        self.inputs.append(arr)
        return i

    def out(self, shape, dtype="int8", dim_order=None):
        i = self.p.add_tensor(tuple(shape), dtype, dim_order=dim_order)
        self.p.outputs.append(i)
        return i

    def s(self, kind, v=None):
        return self.p.add_scalar(kind, v)

    def op(self, name, args, out):
        self.p.instructions.append(Instruction(name, [*args, out, out]))

    def check(self, label=""):
        want = run_int8_reference(self.p, self.inputs)
        mem = [np.ascontiguousarray(x.transpose(self.p.tensor(i).dim_order)).reshape(x.shape)
               for x, i in zip(self.inputs, self.p.inputs)]
        got = run_on_host(self.p, mem)
        for o, g, w in zip(self.p.outputs, got, want):
            t = self.p.tensor(o)
            g = np.asarray(g)
            if t.dim_order:
                g = g.reshape(-1).reshape([t.shape[d] for d in t.dim_order]).transpose(np.argsort(t.dim_order))
            np.testing.assert_array_equal(g, np.asarray(w), err_msg=label)


def i8(rng, *shape):
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def mult_shift(rng, lo=1e-4, hi=0.9):
    return quantize_multiplier(float(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


@pytest.mark.parametrize("seed", range(6))
def test_batch_matmul(seed):
    rng = np.random.default_rng(seed)
    b, m, k, n = (int(v) for v in rng.integers(1, 9, 4))
    c = Case()
    mult, shift = mult_shift(rng, 1e-4, 1e-2)
    ints = [c.s("int", int(v)) for v in (rng.integers(-128, 128), rng.integers(-128, 128), rng.integers(-128, 128))]
    out = c.out((b, m, n))
    c.op("cortex_m::quantized_batch_matmul.out",
         [c.const(i8(rng, b, m, k)), ints[0], c.const(i8(rng, b, n, k)), ints[1], ints[2], c.s("int", mult),
          c.s("int", shift), c.const(np.zeros(0, np.uint8))], out)
    c.check(f"bmm {b}x{m}x{k}x{n}")


@pytest.mark.parametrize("seed", range(8))
def test_transpose_conv2d(seed):
    rng = np.random.default_rng(100 + seed)
    cin, cout = (int(v) for v in rng.integers(1, 6, 2))
    h, w = (int(v) for v in rng.integers(1, 6, 2))
    kh, kw = (int(v) for v in rng.integers(1, 5, 2))
    stride = [int(v) for v in rng.integers(1, 4, 2)]
    dilation = [int(v) for v in rng.integers(1, 3, 2)]
    padding = [int(rng.integers(0, (dilation[i] * ([kh, kw][i] - 1)) // 2 + 1)) for i in range(2)]
    opad = [int(rng.integers(0, max(stride[i], dilation[i]))) for i in range(2)]
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + opad[0] + 1
    ow = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + opad[1] + 1
    if oh < 1 or ow < 1:
        pytest.skip("empty output")
    c = Case()
    ms = [mult_shift(rng, 1e-4, 1e-2) for _ in range(cout)]
    out = c.out((1, cout, oh, ow), dim_order=NHWC)
    il = lambda v: c.s("int_list", list(v))  # noqa: E731
    c.op("cortex_m::quantized_transpose_conv2d.out",
         [c.const(i8(rng, 1, cin, h, w), NHWC), c.const(rng.integers(-127, 128, (cout, kh, kw, cin)).astype(np.int8)),
          c.const(rng.integers(-5000, 5000, cout).astype(np.int32)), il(stride), il(padding), il(opad), il(dilation),
          c.s("int", int(rng.integers(-127, 129))), c.s("int", int(rng.integers(-128, 128))),
          c.const(np.array([m for m, _ in ms], np.int32)), c.const(np.array([s for _, s in ms], np.int32)),
          c.s("int", -128), c.s("int", int(rng.integers(0, 128))), c.const(np.zeros(0, np.uint8)),
          c.const(np.zeros(0, np.uint8))], out)
    c.check(f"transpose conv {cin}->{cout} {h}x{w} k{kh}x{kw} s{stride} p{padding} op{opad} d{dilation}")


@pytest.mark.parametrize("seed", range(8))
def test_avg_pool_ceil_mode_and_global(seed):
    rng = np.random.default_rng(200 + seed)
    ch, h, w = (int(v) for v in rng.integers(1, 12, 3))
    kh, kw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
    stride = [int(v) for v in rng.integers(1, 4, 2)]
    ceil = bool(seed % 2) and seed != 6
    if seed == 6:  # global pooling (adaptive_avg_pool2d(1), mean over H, W)
        kh, kw, stride = h, w, [h, w]
    padding = [0, 0] if ceil else [int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))]

    def size(n, k, p, s):
        o = (n + 2 * p - k + ((s - 1) if ceil else 0)) // s + 1
        return o - 1 if ceil and (o - 1) * s >= n + p else o

    oh, ow = size(h, kh, padding[0], stride[0]), size(w, kw, padding[1], stride[1])
    c = Case()
    m, s = quantize_multiplier(0.05)
    out = c.out((1, ch, oh, ow), dim_order=NHWC)
    il = lambda v: c.s("int_list", list(v))  # noqa: E731
    c.op("cortex_m::quantized_avg_pool2d.out",
         [c.const(i8(rng, 1, ch, h, w), NHWC), il([kh, kw]), il(stride), il(padding), c.s("bool", ceil),
          c.s("int", 3), c.s("int", m), c.s("int", s), c.const(np.zeros(0, np.uint8))], out)
    c.check(f"avg pool {ch}x{h}x{w} k{kh}x{kw} s{stride} p{padding} ceil={ceil}")


@pytest.mark.parametrize("seed", range(4))
def test_pad_channels_last_lut_mul_sub_upsample_cat(seed):
    rng = np.random.default_rng(300 + seed)
    ch, h, w = (int(v) for v in rng.integers(2, 7, 3))
    c = Case()
    il = lambda v: c.s("int_list", list(v))  # noqa: E731
    i = lambda v: c.s("int", int(v))  # noqa: E731
    x = c.const(i8(rng, 1, ch, h, w), NHWC)
    # pad (N, H, W, C order for a channels-last input) with -128, as max pool ceil_mode does
    eh, ew = (int(v) for v in rng.integers(0, 3, 2))
    out = c.out((1, ch, h + eh, w + ew), dim_order=NHWC)
    c.op("cortex_m::pad.out", [x, il([0, 0, 0, 0]), il([0, eh, ew, 0]), i(-128)], out)
    # lookup table
    out = c.out((1, ch, h, w), dim_order=NHWC)
    c.op("cortex_m::quantized_activation.out", [x, c.const(i8(rng, 256))], out)
    # broadcasting mul (squeeze-excite: [1, C, H, W] * [1, C, 1, 1])
    m, s = mult_shift(rng, 1e-3, 0.1)
    out = c.out((1, ch, h, w), dim_order=NHWC)
    c.op("cortex_m::quantized_mul.out", [x, i(rng.integers(-128, 128)), c.const(i8(rng, 1, ch, 1, 1)),
                                         i(rng.integers(-128, 128)), i(rng.integers(-128, 128)), i(m), i(s)], out)
    # sub: an add whose second operand's multiplier is negated
    (m1, s1), (m2, s2) = mult_shift(rng, 0.2, 0.5), mult_shift(rng, 0.2, 0.5)
    mo, so = quantize_multiplier(float(rng.uniform(1e-6, 3e-6)))
    out = c.out((1, ch, h, w), dim_order=NHWC)
    c.op("cortex_m::quantized_add.out", [x, i(rng.integers(-128, 128)), i(m1), i(s1),
                                         c.const(i8(rng, 1, 1, h, w), NHWC), i(rng.integers(-128, 128)), i(-m2),
                                         i(s2), i(rng.integers(-128, 128)), i(mo), i(so), i(-128), i(127)], out)
    # nearest upsampling of int8 (integer and fractional scales)
    oh, ow = int(h * rng.integers(1, 4)), int(rng.integers(1, 3 * w))
    out = c.out((1, ch, oh, ow))
    c.op("aten::upsample_nearest2d.vec_out", [c.const(i8(rng, 1, ch, h, w)), il([oh, ow]), c.s("none")], out)
    # cat of int8 channels-last tensors along C, on their memory-order ([N, H, W, C]) views
    a, b = c.const(i8(rng, 1, h, w, ch)), c.const(i8(rng, 1, h, w, 3))
    out = c.out((1, h, w, ch + 3))
    c.op("aten::cat.out", [c.s("tensor_list", [a, b]), i(3)], out)
    c.check(f"seed {seed}")


MODELS = sorted(p for p in (Path(__file__).parent / "models_int8").glob("*.py"))


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_program_on_host_equals_reference(path):
    """The whole int8 program of each test model: host kernels == integer reference, and the
    dequantized outputs close to PyTorch fp32."""
    import torch

    from mcu_gen.plan import inplace_pass
    from mcu_gen.backends.kernels import find_kernels
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.quantize import export_quantized

    avail = {k.op for k in find_kernels().values()}
    spec = load_model_file(str(path))
    p, _ = export_quantized(spec, has_kernel=lambda op: op in avail)
    inplace_pass.plan_memory(p)
    ins = [t.numpy() for t in spec.test_inputs[0]]
    want = run_int8_reference(p, ins)
    mem_ins = []
    for x, i in zip(ins, p.inputs):
        d = p.tensor(i).dim_order
        mem_ins.append(np.ascontiguousarray(x.transpose(d)).reshape(x.shape) if d else x)
    got = run_on_host(p, mem_ins)
    with torch.no_grad():
        fp = spec.module(*spec.test_inputs[0])
    fp = fp if isinstance(fp, (tuple, list)) else [fp]
    for o, g, w, f in zip(p.outputs, got, want, fp):
        t = p.tensor(o)
        g = np.asarray(g)
        if t.dim_order:
            g = g.reshape([t.shape[d] for d in t.dim_order]).transpose(np.argsort(t.dim_order))
        np.testing.assert_array_equal(g, np.asarray(w), err_msg=path.stem)
        assert np.abs(np.asarray(w, np.float32) - f.numpy()).max() < 0.25


@pytest.mark.parametrize("name", ["se_hardswish", "decoder", "conv1d_audio"])
def test_qat_covers_the_new_patterns(name):
    """QAT with McuQuantizer(qat=True) annotates the same patterns (squeeze-excite with LUTs and
    broadcasting mul, transposed conv and upsampling, conv1d and mean): no fp32 island, and the
    integer reference within two output steps of the converted model."""
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_qat_pt2e

    from mcu_gen.capture.model_file import ModelSpec, load_model_file
    from mcu_gen.quantize import export_quantized
    from mcu_gen.quantize.capture import capture_for_quantization
    from mcu_gen.quantize.quantizer import McuQuantizer

    spec = load_model_file(str(Path(__file__).parent / "models_int8" / f"{name}.py"))
    gm = capture_for_quantization(spec.module.train(), spec.example_inputs, fold_bn=False)
    prepared = prepare_qat_pt2e(gm, McuQuantizer(qat=True))
    opt = torch.optim.SGD(prepared.parameters(), lr=1e-3)
    for inputs in spec.calibration_inputs[:4]:
        loss = prepared(*inputs).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    converted = convert_pt2e(prepared)
    program, _ = export_quantized(ModelSpec(converted, spec.example_inputs, name=f"{name}_qat"))
    assert program.meta["fp32_fallback"] == [], program.meta["fp32_fallback"]
    x = spec.test_inputs[0]
    got = run_int8_reference(program, [t.numpy() for t in x])[0]
    out = program.tensor(program.outputs[0])
    want = converted(*x).detach().numpy()
    step = max(n.args[1] for n in converted.graph.nodes
               if n.op == "call_function" and "dequantize_per_tensor" in str(n.target))
    assert np.max(np.abs(got - want)) <= 2.01 * step, (out.name, np.max(np.abs(got - want)))


@pytest.mark.parametrize("seed", range(3))
def test_ranking_int8_codes_with_ties(seed):
    """topk, max / min over a dim and argmax / argmin on int8 codes from a narrow range (many equal
    values): the host kernels give the integer reference's (PyTorch's) values and indices, ties included."""
    rng = np.random.default_rng(seed)
    c = Case()
    x = c.const(rng.integers(-4, 4, size=(3, 5, 40)).astype(np.int8))
    i, b = (lambda v: c.s("int", v)), (lambda v: c.s("bool", v))
    for k, dim, largest, srt in ((3, -1, True, True), (5, 1, False, True), (2, 0, True, False), (40, 2, True, True)):
        shape = [3, 5, 40]
        shape[dim] = k
        vals, idx = c.out(shape), c.out(shape, "int64")
        c.p.instructions.append(Instruction("aten::topk.values", [x, i(k), i(dim), b(largest), b(srt), vals, idx,
                                                                  c.s("tensor_list", [vals, idx])]))
    for op, dim, keep in (("aten::max.dim_max", 2, False), ("aten::min.dim_min", 1, True)):
        shape = [3, 5, 40]
        shape[dim] = 1
        shape = shape if keep else [s for d, s in enumerate(shape) if d != dim]
        vals, idx = c.out(shape), c.out(shape, "int64")
        c.p.instructions.append(Instruction(op, [x, i(dim), b(keep), vals, idx, c.s("tensor_list", [vals, idx])]))
    for op in ("aten::argmax.out", "aten::argmin.out"):
        c.op(op, [x, i(1), b(False)], c.out((3, 40), "int64"))
    c.check(f"seed {seed}")


def test_comparison_with_a_number_as_a_code_threshold():
    """The int8 lowering of x <op> c (int8_ops/compare.py): one integer comparison of the codes gives,
    for every code, what the converted graph computes (dequantize in float32, compare with c), also for
    c exactly on a dequantized value, one float32 step beside it, and outside the range."""
    import torch

    from mcu_gen.quantize.int8_ops.compare import SCALAR_COMPARISONS, dequantized_codes, code_test

    rng = np.random.default_rng(0)
    codes = np.arange(-128, 128)
    ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}
    for _ in range(60):
        scale, zp = float(np.exp(rng.uniform(-9, 1))), int(rng.integers(-128, 128))
        f = dequantized_codes(scale, zp)
        hit = float(f[int(rng.integers(0, 256))])
        for c in (hit, float(np.nextafter(np.float32(hit), np.float32(np.inf))), hit - 1e-9, 0.0, 1e6, -1e6,
                  float(rng.uniform(-2, 2)), int(rng.integers(-3, 3))):
            for target, name in SCALAR_COMPARISONS.items():
                truth = target(f, c).numpy()
                op, threshold = code_test(truth)
                assert -128 <= threshold <= 127
                np.testing.assert_array_equal(ops[op](codes, threshold), truth, err_msg=f"{name} {c} {scale} {zp}")
    assert code_test(np.array([True, False, True] + [False] * 253)) is None
    assert torch.equal(dequantized_codes(0.5, 3)[:2], torch.tensor([-65.5, -65.0]))
