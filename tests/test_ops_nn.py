"""Portable nn kernels (constant_pad_nd, native_group_norm, _native_batch_norm_legit.no_stats,
upsample_bilinear2d) against PyTorch on the host runner: one native build covers every case."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction, Program

RNG = np.random.default_rng(24)
DTYPES = {"float32": torch.float32, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool,
          "int8": torch.int8, "uint8": torch.uint8}


class Builder:
    def __init__(self):
        self.p = Program()
        self.p.meta["aliases"] = {}
        self.feeds, self.expected = [], []

    def input(self, t: torch.Tensor) -> int:
        a = t.numpy()
        v = self.p.add_tensor(a.shape, str(a.dtype))
        self.p.inputs.append(v)
        self.feeds.append(a)
        return v

    def s(self, kind, value=None) -> int:
        return self.p.add_scalar(kind, value)

    def call(self, label, op, args, want):
        """One instruction; want is a tensor (one out) or a tuple of tensors (outs + their list)."""
        wants = list(want) if isinstance(want, tuple) else [want]
        outs = [self.p.add_tensor(tuple(w.shape), str(w.numpy().dtype)) for w in wants]
        tail = outs + [self.s("tensor_list", outs)] if isinstance(want, tuple) else outs + outs
        self.p.instructions.append(Instruction(op, list(args) + tail))
        for k, (o, w) in enumerate(zip(outs, wants)):
            self.p.outputs.append(o)
            self.expected.append((f"{label}[{k}]", w.numpy()))

    def run(self, rtol=1e-5, atol=1e-5):
        got = run_on_host(self.p, self.feeds)
        assert len(got) == len(self.expected)
        for (label, want), g in zip(self.expected, got):
            assert g.shape == want.shape, label
            assert g.dtype == want.dtype, label
            if want.dtype.kind == "f":
                np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, err_msg=label)
            else:
                np.testing.assert_array_equal(g, want, err_msg=label)


def sample(shape, dtype):
    if dtype == "float32":
        return torch.from_numpy(RNG.standard_normal(shape).astype(np.float32) * 2)
    if dtype == "bool":
        return torch.from_numpy(RNG.integers(0, 2, shape).astype(bool))
    return torch.from_numpy(RNG.integers(-100 if dtype != "uint8" else 0, 100, shape)).to(DTYPES[dtype])


PAD_CASES = [
    ((2, 3, 4, 5), (1, 2), 0.0),
    ((2, 3, 4, 5), (2, 1, 0, 3), 1.5),
    ((1, 3, 4, 5), (-1, 2, 1, -2), -2.0),  # crops
    ((3, 4, 5), (1, 1, 1, 1, 1, 1), 3.0),  # every dim
    ((2, 8), (4, 0), 0.0),  # causal conv1d left pad
    ((2, 5), (-3, -2), 0.0),  # crop to empty
    ((4,), (0, 0), 7.0),
    ((1, 2, 3, 4), (0, 0, 0, 0, 2, 1), 0.25),
]


def test_constant_pad_nd():
    b = Builder()
    for dtype in ("float32", "int32", "int64", "bool", "int8", "uint8"):
        for shape, pad, value in PAD_CASES:
            x = sample(shape, dtype)
            v = value if dtype == "float32" else (True if dtype == "bool" else abs(int(value)))
            kind = "float" if dtype == "float32" else ("bool" if dtype == "bool" else "int")
            b.call(f"pad {dtype} {shape} {pad}", "aten::constant_pad_nd.out",
                   [b.input(x), b.s("int_list", list(pad)), b.s(kind, v)], F.pad(x, pad, value=v))
    # an integer Scalar into a float tensor
    x = sample((2, 3), "float32")
    b.call("pad float int-scalar", "aten::constant_pad_nd.out", [b.input(x), b.s("int_list", [1, 1]), b.s("int", 4)],
           F.pad(x, (1, 1), value=4))
    b.run(rtol=0, atol=0)


def test_group_norm_batch_norm_no_stats():
    b = Builder()
    for shape, groups, affine in [((2, 4, 5, 6), 2, True), ((1, 6, 7), 3, False), ((3, 8, 2, 2), 8, True),
                                  ((1, 4, 3, 3), 1, True), ((2, 6), 2, True)]:
        x = sample(shape, "float32") + 1.0
        n, c = shape[0], shape[1]
        hw = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        w = sample((c,), "float32") if affine else None
        bias = sample((c,), "float32") if affine else None
        want = torch.ops.aten.native_group_norm.default(x, w, bias, n, c, hw, groups, 1e-5)
        args = [b.input(x), b.input(w) if affine else b.s("none"), b.input(bias) if affine else b.s("none"),
                b.s("int", n), b.s("int", c), b.s("int", hw), b.s("int", groups), b.s("float", 1e-5)]
        b.call(f"group_norm {shape} g{groups}", "aten::native_group_norm.out", args, tuple(want))
    for shape, affine in [((2, 3, 4, 5), True), ((4, 5), False), ((1, 2, 9), True)]:
        x = sample(shape, "float32")
        c = shape[1]
        w = sample((c,), "float32") if affine else None
        bias = sample((c,), "float32") if affine else None
        want = torch.ops.aten._native_batch_norm_legit.no_stats(x, w, bias, True, 0.1, 1e-3)
        args = [b.input(x), b.input(w) if affine else b.s("none"), b.input(bias) if affine else b.s("none"),
                b.s("bool", True), b.s("float", 0.1), b.s("float", 1e-3)]
        b.call(f"batch_norm no_stats {shape}", "aten::_native_batch_norm_legit.no_stats_out", args, tuple(want))
    b.run(rtol=1e-4, atol=1e-4)


def test_upsample_bilinear2d():
    b = Builder()
    for shape, size, scale in [((1, 2, 3, 4), None, 2.0), ((2, 3, 5, 5), None, 3.0), ((1, 1, 4, 6), (7, 5), None),
                               ((1, 2, 6, 6), (3, 2), None), ((1, 1, 1, 1), (4, 3), None),
                               ((1, 1, 3, 2), (1, 1), None), ((1, 2, 5, 40), (5, 80), None)]:
        x = sample(shape, "float32")
        for ac in (False, True):
            if size is None:
                want = F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=ac)
                args = [b.input(x), b.s("none"), b.s("bool", ac), b.s("float_list", [scale, scale])]
            else:
                want = F.interpolate(x, size=size, mode="bilinear", align_corners=ac)
                args = [b.input(x), b.s("int_list", list(size)), b.s("bool", ac), b.s("none")]
            b.call(f"bilinear {shape} {size or scale} ac={ac}", "aten::upsample_bilinear2d.vec_out", args, want)
    b.run(rtol=1e-5, atol=1e-5)


def test_reflection_replication_pad():
    b = Builder()
    for dtype in ("float32", "int32", "int64", "bool", "int8"):
        for shape, pad in [((2, 3, 5), (1, 2)), ((3, 6), (0, 4)), ((1, 2, 4, 5), (1, 2, 3, 0)), ((2, 3, 3), (2, 2, 1, 2)),
                           ((1, 1, 4, 4), (3, 3, 3, 3)), ((2, 4), (0, 0))]:
            x = sample(shape, dtype)
            k = len(pad) // 2
            for mode, name in (("reflect", "reflection"), ("replicate", "replication")):
                op = f"aten::{name}_pad{k}d.out"
                xt = x.float() if dtype != "float32" else x  # torch's pads take float only
                want = F.pad(xt, pad, mode=mode).to(x.dtype)
                b.call(f"{mode} {dtype} {shape} {pad}", op, [b.input(x), b.s("int_list", list(pad))], want)
    b.run(rtol=0, atol=0)
