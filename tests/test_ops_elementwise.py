"""Portable elementwise kernels for every dtype (comparisons, logical/bitwise, unary math,
binary math, fill/full/_to_copy) against PyTorch eager, on the host runner.

Each test builds one program with many instructions, so one native build covers many cases.
Integers and bools must match exactly; float32 within 1e-5 relative (NaN/inf where torch has them).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction, Program

RNG = np.random.default_rng(24)

NP = {"float32": np.float32, "int32": np.int32, "int64": np.int64, "bool": np.bool_, "int8": np.int8,
      "uint8": np.uint8, "int16": np.int16}
TD = {"float32": torch.float32, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool,
      "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16}
DTYPES = ["float32", "int32", "int64", "bool", "int8", "uint8"]
SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((), (2, 2)), ((3,), ()), ((0, 2), (2,))]


def sample(shape, dtype, special=True) -> np.ndarray:
    """Values of a dtype: floats with NaN/inf sprinkled in, ints over a small range (so that
    comparisons hit equality), bools half true."""
    if dtype == "float32":
        a = (RNG.standard_normal(shape) * 3).astype(np.float32)
        if special and a.size >= 4:
            flat = a.reshape(-1)
            flat[RNG.integers(0, a.size)] = np.nan
            flat[RNG.integers(0, a.size)] = np.inf
            flat[RNG.integers(0, a.size)] = -np.inf
        return np.round(a, 1) if a.size else a
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(np.bool_)
    lo = 0 if dtype == "uint8" else -5
    return RNG.integers(lo, 6, shape).astype(NP[dtype])


class Builder:
    """One Program, many instructions; remembers torch's result for every output."""

    def __init__(self):
        self.p = Program()
        self.p.meta["aliases"] = {}
        self.feeds, self.expected = [], []

    def input(self, array: np.ndarray) -> int:
        array = np.array(array, order="C")
        v = self.p.add_tensor(array.shape, str(array.dtype) if array.dtype != np.bool_ else "bool")
        self.p.inputs.append(v)
        self.feeds.append(array)
        return v

    def scalar(self, value) -> int:
        if value is None:
            return self.p.add_scalar("none")
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else (
            "string" if isinstance(value, str) else "float")
        return self.p.add_scalar(kind, value)

    def call(self, label: str, op: str, args: list, want: torch.Tensor):
        """Appends op(args..., out) with out shaped and typed as torch's result `want`."""
        want = want.detach()
        dtype = str(want.dtype).replace("torch.", "")
        out = self.p.add_tensor(tuple(want.shape), dtype)
        self.p.instructions.append(Instruction(op, list(args) + [out, out]))
        self.p.outputs.append(out)
        self.expected.append((label, want.numpy()))
        return out

    def run(self, rtol=1e-5, atol=1e-6):
        got = run_on_host(self.p, self.feeds)
        assert len(got) == len(self.expected)
        bad = []
        for (label, want), g in zip(self.expected, got):
            if g.shape != want.shape or g.dtype != want.dtype:
                bad.append(f"{label}: got {g.dtype}{g.shape}, want {want.dtype}{want.shape}")
            elif want.dtype == np.float32:
                try:
                    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)
                except AssertionError as e:
                    bad.append(f"{label}: {str(e)[:300]}")
            elif not np.array_equal(g, want):
                bad.append(f"{label}: got {g.reshape(-1)[:12]}, want {want.reshape(-1)[:12]}")
        assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} of {len(got)} wrong)"


def T(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(a))


# --------------------------------------------------------------------------
# Comparisons, logical, bitwise

COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]


def test_comparisons_tensor_and_scalar():
    b = Builder()
    for name in COMPARE:
        fn = getattr(torch, name)
        for da, db in [("float32", "float32"), ("int32", "int32"), ("int64", "int32"), ("bool", "bool"),
                       ("int8", "uint8"), ("uint8", "float32"), ("int32", "float32"), ("bool", "int64")]:
            for sa, sb in SHAPE_PAIRS:
                x, y = sample(sa, da), sample(sb, db)
                b.call(f"{name}.Tensor {da}{sa} {db}{sb}", f"aten::{name}.Tensor_out",
                       [b.input(x), b.input(y)], fn(T(x), T(y)))
        for dtype in DTYPES:
            x = sample((3, 4), dtype)
            for s in [0, 2, -1, 1.5, True]:
                if dtype == "uint8" and s == -1:
                    continue  # torch refuses comparing uint8 with a negative int (overflow)
                b.call(f"{name}.Scalar {dtype} {s!r}", f"aten::{name}.Scalar_out", [b.input(x), b.scalar(s)],
                       fn(T(x), s))
    b.run()


def test_logical_ops():
    b = Builder()
    for name in ["logical_and", "logical_or", "logical_xor"]:
        fn = getattr(torch, name)
        for da, db in [("float32", "float32"), ("int32", "bool"), ("bool", "bool"), ("uint8", "int64")]:
            for sa, sb in SHAPE_PAIRS:
                x, y = sample(sa, da), sample(sb, db)
                b.call(f"{name} {da}{sa} {db}{sb}", f"aten::{name}.out", [b.input(x), b.input(y)], fn(T(x), T(y)))
    for dtype in DTYPES:
        x = sample((5,), dtype)
        b.call(f"logical_not {dtype}", "aten::logical_not.out", [b.input(x)], torch.logical_not(T(x)))
    b.run()


def test_bitwise_ops():
    b = Builder()
    ints = ["int32", "int64", "bool", "int8", "uint8"]
    for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        fn = getattr(torch, name)
        for da, db in [(d, d) for d in ints] + [("int8", "uint8"), ("bool", "int32")]:
            for sa, sb in SHAPE_PAIRS[:4]:
                x, y = sample(sa, da), sample(sb, db)
                b.call(f"{name}.Tensor {da} {db}", f"aten::{name}.Tensor_out", [b.input(x), b.input(y)],
                       fn(T(x), T(y)))
        for d in ints:
            for s in ([True, False] if d == "bool" else [3, 6]):
                x = sample((2, 3), d)
                b.call(f"{name}.Scalar {d} {s}", f"aten::{name}.Scalar_out", [b.input(x), b.scalar(s)], fn(T(x), s))
    for d in ints:
        x = sample((7,), d)
        b.call(f"bitwise_not {d}", "aten::bitwise_not.out", [b.input(x)], torch.bitwise_not(T(x)))
    for name in ["bitwise_left_shift", "bitwise_right_shift"]:
        fn = getattr(torch, name)
        for d in ["int32", "int64", "int8", "uint8"]:
            x = sample((2, 6), d)
            y = np.array([0, 1, 3, 7, 8, 40][:6], dtype=NP[d]).reshape(1, 6) if d != "int8" else \
                np.array([0, 1, 3, 7, 8, -1], dtype=np.int8).reshape(1, 6)
            if d == "int8":
                y = np.array([0, 1, 3, 7, 2, 5], dtype=np.int8).reshape(1, 6)
            b.call(f"{name}.Tensor {d}", f"aten::{name}.Tensor_out", [b.input(x), b.input(y)], fn(T(x), T(y)))
            b.call(f"{name}.Tensor_Scalar {d}", f"aten::{name}.Tensor_Scalar_out", [b.input(x), b.scalar(2)],
                   fn(T(x), 2))
    b.run()


# --------------------------------------------------------------------------
# Unary math

FLOAT_UNARY = ["sqrt", "rsqrt", "log", "log2", "log10", "log1p", "exp", "expm1", "sin", "cos", "tan", "asin",
               "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "reciprocal"]
SAME_UNARY = ["neg", "sign", "round", "floor", "ceil", "trunc", "abs"]


def float_sample(shape):
    x = sample(shape, "float32")
    x.reshape(-1)[:6] = [0.0, -0.0, 0.5, -0.5, 2.5, -1.5][: x.size]
    return x


def test_unary_float_ops():
    b = Builder()
    for name in FLOAT_UNARY:
        fn = getattr(torch, name)
        for shape in [(3, 5), ()]:
            x = float_sample(shape) if shape else np.array(0.7, np.float32)
            b.call(f"{name} float32{shape}", f"aten::{name}.out", [b.input(x)], fn(T(x)))
        for dtype in ["int32", "int64", "bool", "uint8", "int8"]:
            x = sample((4,), dtype)
            b.call(f"{name} {dtype}", f"aten::{name}.out", [b.input(x)], fn(T(x)))
    for name in SAME_UNARY:
        fn = getattr(torch, name)
        for dtype in ["float32", "int32", "int64", "int8", "uint8"]:
            if name == "neg" and dtype == "uint8":
                continue
            x = float_sample((3, 4)) if dtype == "float32" else sample((3, 4), dtype)
            b.call(f"{name} {dtype}", f"aten::{name}.out", [b.input(x)], fn(T(x)))
    x = sample((3,), "bool")
    b.call("sign bool", "aten::sign.out", [b.input(x)], torch.sign(T(x)))
    for name in ["isnan", "isinf"]:
        for dtype in DTYPES:
            x = sample((9,), dtype)
            b.call(f"{name} {dtype}", f"aten::{name}.out", [b.input(x)], getattr(torch, name)(T(x)))
    x = np.array([0.0, 0.1, 0.5, 0.9, 1.0, -0.2, np.nan], np.float32)
    b.call("logit", "aten::logit.out", [b.input(x), b.scalar(None)], torch.logit(T(x)))
    b.call("logit eps", "aten::logit.out", [b.input(x), b.scalar(0.05)], torch.logit(T(x), eps=0.05))
    b.run(rtol=2e-5, atol=2e-6)


# --------------------------------------------------------------------------
# Binary math

def nonzero(shape, dtype):
    a = sample(shape, dtype)
    if dtype != "float32":
        a[a == 0] = 3
    return a


def test_binary_math_ops():
    b = Builder()
    pairs = [("float32", "float32"), ("int32", "int32"), ("int64", "int32"), ("int8", "int8"), ("int32", "float32")]
    for name in ["maximum", "minimum", "atan2", "remainder", "fmod", "floor_divide"]:
        fn = getattr(torch, name)
        for da, db in pairs:
            if name == "atan2" and da == db == "int8":
                continue
            for sa, sb in SHAPE_PAIRS[:4]:
                x = sample(sa, da)
                y = nonzero(sb, db) if name in ("remainder", "fmod", "floor_divide") else sample(sb, db)
                b.call(f"{name} {da}{sa} {db}{sb}", f"aten::{name}.out" if name in (
                    "maximum", "minimum", "atan2", "floor_divide") else f"aten::{name}.Tensor_out",
                    [b.input(x), b.input(y)], fn(T(x), T(y)))
    for name in ["remainder", "fmod"]:
        for dtype, s in [("float32", 1.5), ("float32", -2.0), ("int32", 3), ("int64", -4), ("int32", 2.5)]:
            x = sample((2, 5), dtype)
            b.call(f"{name}.Scalar {dtype} {s}", f"aten::{name}.Scalar_out", [b.input(x), b.scalar(s)],
                   getattr(torch, name)(T(x), s))
    # pow
    for da, db in [("float32", "float32"), ("int32", "int32"), ("int64", "int64"), ("float32", "int32")]:
        x = np.abs(sample((3, 4), da)) if da == "float32" else sample((3, 4), da)
        y = sample((4,), db) if db != "float32" else np.array([0.5, 2.0, -1.0, 3.0], np.float32)
        if db != "float32":
            y = np.abs(y) if da == "float32" else y
        b.call(f"pow.Tensor_Tensor {da} {db}", "aten::pow.Tensor_Tensor_out", [b.input(x), b.input(y)],
               torch.pow(T(x), T(y)))
    for dtype, s in [("float32", 2), ("float32", 0.5), ("float32", -1.5), ("int32", 3), ("int64", 0), ("int32", 2.0)]:
        x = np.abs(sample((6,), dtype)) if dtype == "float32" else sample((6,), dtype)
        b.call(f"pow.Tensor_Scalar {dtype} {s}", "aten::pow.Tensor_Scalar_out", [b.input(x), b.scalar(s)],
               torch.pow(T(x), s))
    for dtype, s in [("float32", 2.0), ("int32", 2), ("float32", 3)]:
        y = sample((5,), dtype)
        if dtype == "int32":
            y = np.abs(y)
        b.call(f"pow.Scalar {dtype} {s}", "aten::pow.Scalar_out", [b.scalar(s), b.input(y)], torch.pow(s, T(y)))
    # div with and without rounding modes, add/sub/mul on every dtype
    for da, db in [("float32", "float32"), ("int32", "int32"), ("int64", "int8"), ("uint8", "uint8"),
                   ("int32", "float32")]:
        for sa, sb in SHAPE_PAIRS[:4]:
            x, y = sample(sa, da), nonzero(sb, db)
            xi, yi = b.input(x), b.input(y)
            b.call(f"div {da} {db}", "aten::div.out", [xi, yi], torch.div(T(x), T(y)))
            for mode in ["trunc", "floor", None]:
                b.call(f"div.out_mode {mode} {da} {db}", "aten::div.out_mode", [xi, yi, b.scalar(mode)],
                       torch.div(T(x), T(y), rounding_mode=mode))
            b.call(f"mul {da} {db}", "aten::mul.out", [xi, yi], torch.mul(T(x), T(y)))
            alpha = 2 if "float32" not in (da, db) else 0.5
            b.call(f"add {da} {db}", "aten::add.out", [xi, yi, b.scalar(alpha)], torch.add(T(x), T(y), alpha=alpha))
            b.call(f"sub {da} {db}", "aten::sub.out", [xi, yi, b.scalar(alpha)], torch.sub(T(x), T(y), alpha=alpha))
    for d in ["float32", "int32", "int64", "int8", "bool"]:
        x, y = sample((2, 3), d), sample((3,), d)
        if d == "bool":
            b.call("add bool", "aten::add.out", [b.input(x), b.input(y), b.scalar(1)], torch.add(T(x), T(y)))
            b.call("mul bool", "aten::mul.out", [b.input(x), b.input(y)], torch.mul(T(x), T(y)))
            continue
        for s in [3, -2, 1.5]:
            xi = b.input(x)
            b.call(f"add.Scalar {d} {s}", "aten::add.Scalar_out", [xi, b.scalar(s), b.scalar(1)], torch.add(T(x), s))
            b.call(f"sub.Scalar {d} {s}", "aten::sub.Scalar_out", [xi, b.scalar(s), b.scalar(1)], torch.sub(T(x), s))
            b.call(f"mul.Scalar {d} {s}", "aten::mul.Scalar_out", [xi, b.scalar(s)], torch.mul(T(x), s))
            b.call(f"div.Scalar {d} {s}", "aten::div.Scalar_out", [xi, b.scalar(s)], torch.div(T(x), s))
            b.call(f"rsub.Scalar {d} {s}", "aten::rsub.Scalar_out", [xi, b.scalar(s), b.scalar(1)], torch.rsub(T(x), s))
            for mode in ["trunc", "floor"]:
                b.call(f"div.Scalar_mode {mode} {d} {s}", "aten::div.Scalar_mode_out", [xi, b.scalar(s), b.scalar(mode)],
                       torch.div(T(x), s, rounding_mode=mode))
    # clamp.Tensor: both bounds, one bound, broadcast bounds
    for d in ["float32", "int32", "int64"]:
        x, lo, hi = sample((3, 4), d), sample((4,), d), sample((3, 1), d)
        hi = np.maximum(hi, 0).astype(NP[d])
        xi, li, hi_ = b.input(x), b.input(lo), b.input(hi)
        b.call(f"clamp.Tensor {d}", "aten::clamp.Tensor_out", [xi, li, hi_], torch.clamp(T(x), T(lo), T(hi)))
        b.call(f"clamp.Tensor min {d}", "aten::clamp.Tensor_out", [xi, li, b.scalar(None)], torch.clamp(T(x), min=T(lo)))
        b.call(f"clamp.Tensor max {d}", "aten::clamp.Tensor_out", [xi, b.scalar(None), hi_], torch.clamp(T(x), max=T(hi)))
    b.run(rtol=2e-5, atol=2e-6)


# --------------------------------------------------------------------------
# fill / full / _to_copy / masked_fill, and failures

def test_fill_full_to_copy_masked_fill():
    b = Builder()
    for dtype in DTYPES:
        x = sample((2, 3), dtype)
        xi = b.input(x)
        for v in [0, 3, -1.5, True]:
            if dtype in ("uint8",) and v == -1.5:
                continue
            b.call(f"fill.Scalar {dtype} {v}", "aten::fill.Scalar_out", [xi, b.scalar(v)], torch.fill(T(x), v))
            b.call(f"full_like {dtype} {v}", "aten::full_like.out", [xi, b.scalar(v), b.scalar(None)],
                   torch.full_like(T(x), v))
            b.call(f"full {dtype} {v}", "aten::full.out", [b.p.add_scalar("int_list", [3, 2]), b.scalar(v)],
                   torch.full((3, 2), v, dtype=TD[dtype]))
            b.call(f"scalar_tensor {dtype} {v}", "aten::scalar_tensor.out", [b.scalar(v)],
                   torch.scalar_tensor(v, dtype=TD[dtype]))
        v = sample((), dtype)
        b.call(f"fill.Tensor {dtype}", "aten::fill.Tensor_out", [xi, b.input(v)], torch.fill(T(x), T(v)))
        for name, fn in [("zeros", torch.zeros), ("ones", torch.ones)]:
            b.call(f"{name} {dtype}", f"aten::{name}.out", [b.p.add_scalar("int_list", [2, 0, 3][:2])],
                   fn((2, 0), dtype=TD[dtype]))
            b.call(f"{name} {dtype} 3d", f"aten::{name}.out", [b.p.add_scalar("int_list", [1, 2, 3])],
                   fn((1, 2, 3), dtype=TD[dtype]))
        for to in DTYPES:
            x2 = sample((2, 4), dtype)
            if dtype == "float32":  # in range of every target (ATen leaves out-of-range casts undefined)
                x2 = np.clip(np.nan_to_num(x2), 0 if to == "uint8" else -100, 100).astype(np.float32)
            b.call(f"_to_copy {dtype}->{to}", "aten::_to_copy.out", [b.input(x2), b.scalar(False), b.scalar(None)],
                   T(x2).to(TD[to]))
        for name in ["alias_copy", "detach_copy"]:
            b.call(f"{name} {dtype}", f"aten::{name}.out", [xi], T(x).clone())
        for sm in [(2, 3), (3,), ()]:
            m = sample(sm, "bool")
            for v in ([1, 0.5] if dtype != "bool" else [True]):
                if dtype not in ("float32",) and isinstance(v, float):
                    continue
                b.call(f"masked_fill {dtype} {sm} {v}", "aten::masked_fill.Scalar_out", [xi, b.input(m), b.scalar(v)],
                       T(x).masked_fill(T(m), v))
    b.run()


@pytest.mark.parametrize("op,args,dtypes", [
    ("aten::remainder.Tensor_out", 2, ("int32", "int32")),
    ("aten::floor_divide.out", 2, ("int64", "int64")),
    ("aten::fmod.Tensor_out", 2, ("int8", "int8")),
    ("aten::bitwise_and.Tensor_out", 2, ("float32", "float32")),
    ("aten::neg.out", 1, ("bool",)),
])
def test_integer_division_by_zero_and_bad_dtypes_fail(op, args, dtypes):
    """ATen raises on integer division by zero and on bitwise ops of floats: the kernel fails
    (KernelFailed), never traps or computes garbage."""
    from mcu_gen.firmware.host import HostRunError

    b = Builder()
    ins = [b.input(np.array([4, 0, -3], dtype=NP[d]) if k == 0 else np.array([2, 0, 1], dtype=NP[d]))
           for k, d in enumerate(dtypes)]
    out = b.p.add_tensor((3,), dtypes[0])
    b.p.instructions.append(Instruction(op, ins + [out, out]))
    b.p.outputs.append(out)
    with pytest.raises(HostRunError, match="KernelFailed"):
        run_on_host(b.p, b.feeds)


# --------------------------------------------------------------------------
# A small audio-style front end on QEMU: fp32 and --quantize int8

class FrontEnd(torch.nn.Module):
    """log-magnitude, rsqrt normalisation, comparisons -> where / masked_fill, a bool mask output."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        mag = torch.log(x.abs() + 1e-3)
        scale = torch.rsqrt(mag * mag + 1.0)
        y = self.proj(mag * scale)
        loud = x > 0.25
        y = torch.where(loud, y, torch.exp(-y.abs()))
        y = y.masked_fill(x < -1.5, 0.0)
        y = torch.maximum(y, torch.sqrt(x * x + 0.01) - 1.0) + torch.floor(x * 2.0) * 0.125
        return y, loud, torch.logical_not(loud)


def _frontend_inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 6, 8, generator=g) * 1.5,) for _ in range(n)]


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", [None, "int8"])
def test_frontend_model_verifies_on_mps2_an505(quantize, tmp_path, qemu_tools):
    import mcu_gen

    kw = {"quantize": quantize} if quantize else {}
    r = mcu_gen.run(FrontEnd().eval(), example_inputs=_frontend_inputs(1, 1)[0], calibration=_frontend_inputs(3, 8),
                    test_inputs=_frontend_inputs(2, 2), name=f"frontend_{quantize or 'fp32'}", board="mps2-an505",
                    out=tmp_path / "fe", **kw)
    assert r.verified, f"max abs error {r.max_abs_error} > {r.tolerance}"
    assert r.n_inferences >= 2
