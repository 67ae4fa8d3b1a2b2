"""Portable fp32 elementwise, activation, softmax and shape kernels against PyTorch.

Each test builds one small program with many instructions, so a single native
build (mcu_gen.host.run_on_host) covers many cases.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction, Program

RNG = np.random.default_rng(1234)


class Builder:
    """Builds a Program one instruction at a time and remembers the PyTorch expectation of each output."""

    def __init__(self):
        self.p = Program()
        self.feeds = []  # input arrays, in program.inputs order
        self.expected = []  # (label, value index, expected array)
        self.p.meta["aliases"] = {}

    def input(self, array: np.ndarray, dtype="float32", dim_order=None) -> int:
        array = np.array(array, dtype=dtype, order="C")  # keeps 0-dim arrays 0-dim
        v = self.p.add_tensor(array.shape, dtype, dim_order=dim_order)
        self.p.inputs.append(v)
        self.feeds.append(array)
        return v

    def tensor(self, shape, alias_of: int | None = None, dtype="float32", dim_order=None) -> int:
        v = self.p.add_tensor(tuple(shape), dtype, dim_order=dim_order)
        if alias_of is not None:
            self.p.meta["aliases"][v] = alias_of
        return v

    def scalar(self, kind: str, value=None) -> int:
        return self.p.add_scalar(kind, value)

    def call(self, op: str, args: list, out: int) -> int:
        """One out tensor, passed last and returned (the .pte convention)."""
        self.p.instructions.append(Instruction(op, list(args) + [out, out]))
        return out

    def expect(self, label: str, value: int, expected):
        if isinstance(expected, torch.Tensor):
            expected = expected.numpy()
        self.p.outputs.append(value)
        self.expected.append((label, value, np.asarray(expected, dtype=self.p.tensor(value).dtype)))

    def run_and_check(self, rtol=1e-6, atol=1e-6, tolerances=None):
        tolerances = tolerances or {}
        outputs = run_on_host(self.p, self.feeds)
        assert len(outputs) == len(self.expected)
        for (label, _, want), got in zip(self.expected, outputs):
            r, a = tolerances.get(label.split(":")[0], (rtol, atol))
            assert got.shape == want.shape, label
            assert got.dtype == want.dtype, label
            np.testing.assert_allclose(got, want, rtol=r, atol=a, err_msg=label)


def t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(a, dtype=np.float32, order="C"))


def rand(*shape, scale=2.0) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape) * scale, dtype=np.float32)


# --------------------------------------------------------------------------
# Binary ops with broadcasting


BINARY = {
    "aten::add.out": lambda a, b: torch.add(a, b, alpha=1.5),
    "aten::sub.out": lambda a, b: torch.sub(a, b, alpha=-2),
    "aten::mul.out": torch.mul,
    "aten::div.out": torch.div,
}


def add_binary(bld: Builder, op: str, x: int, y: int, xa, ya, label: str, out_alias=None):
    out_shape = np.broadcast_shapes(xa.shape, ya.shape)
    out = bld.tensor(out_shape, alias_of=out_alias)
    args = [x, y]
    if op == "aten::add.out":
        args.append(bld.scalar("float", 1.5))
    elif op == "aten::sub.out":
        args.append(bld.scalar("int", -2))
    bld.call(op, args, out)
    bld.expect(f"{op} {label}", out, BINARY[op](t(xa), t(ya)))


shape_pairs = st.lists(
    mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=5, min_side=1, max_side=4),
    min_size=5,
    max_size=5,
)


@settings(max_examples=3, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape_pairs)
def test_binary_broadcasting_matches_torch(pairs):
    bld = Builder()
    for k, shapes in enumerate(pairs):
        sa, sb = shapes.input_shapes
        xa, ya = rand(*sa), rand(*sb)
        ya[np.abs(ya) < 0.1] = 0.5  # keep division well conditioned
        x, y = bld.input(xa), bld.input(ya)
        for op in BINARY:
            add_binary(bld, op, x, y, xa, ya, f"{sa} {sb}")
    bld.run_and_check()


def test_binary_fixed_shapes():
    bld = Builder()
    cases = [
        ((2, 3, 4, 5), (2, 3, 4, 5)),  # same shape
        ((2, 3, 4, 5), (1,)),  # scalar tensor
        ((), (2, 3)),  # 0-dim first
        ((1, 8, 4, 4), (1, 8, 1, 1)),  # per channel
        ((4, 1, 5), (3, 1)),  # both broadcast
        ((2, 1, 3, 1, 2, 1, 2, 1), (1, 2, 1, 3, 1, 2, 1, 2)),  # 8 dims
        ((7,), (3, 1, 7)),
    ]
    for sa, sb in cases:
        xa, ya = rand(*sa), rand(*sb)
        ya[np.abs(ya) < 0.1] = 0.5
        x, y = bld.input(xa), bld.input(ya)
        for op in BINARY:
            add_binary(bld, op, x, y, xa, ya, f"{sa} {sb}")
            add_binary(bld, op, y, x, ya, xa, f"{sb} {sa}")
    bld.run_and_check()


def test_elementwise_in_place():
    bld = Builder()
    xa, wa, ba = rand(2, 4, 3, 3), rand(2, 4, 3, 3), rand(1, 4, 1, 1)
    x, w, b = bld.input(xa), bld.input(wa), bld.input(ba)
    # x * w into a fresh tensor, then a chain that reuses its memory.
    m = bld.call("aten::mul.out", [x, w], bld.tensor(xa.shape))
    r = bld.call("aten::relu.out", [m], bld.tensor(xa.shape, alias_of=m))
    a = bld.call("aten::add.out", [r, b, bld.scalar("int", 1)], bld.tensor(xa.shape, alias_of=r))
    # out aliases the *second* operand, the first one broadcasts.
    s = bld.call("aten::sub.out", [b, a, bld.scalar("float", 0.5)], bld.tensor(xa.shape, alias_of=a))
    c = bld.call("aten::clamp.out", [s, bld.scalar("float", -1.0), bld.scalar("none")], bld.tensor(xa.shape, alias_of=s))
    g = bld.call("aten::gelu.out", [c, bld.scalar("string", "tanh")], bld.tensor(xa.shape, alias_of=c))
    d = bld.call("aten::div.Scalar_out", [g, bld.scalar("float", 4.0)], bld.tensor(xa.shape, alias_of=g))
    sm = bld.call("aten::_softmax.out", [d, bld.scalar("int", 1), bld.scalar("bool", False)], bld.tensor(xa.shape, alias_of=d))
    ls = bld.call(
        "aten::_log_softmax.out", [sm, bld.scalar("int", -1), bld.scalar("bool", False)], bld.tensor(xa.shape, alias_of=sm)
    )
    v = bld.call("aten::view_copy.out", [ls, bld.scalar("int_list", [2, -1])], bld.tensor((2, 36), alias_of=ls))

    X, W, B = t(xa), t(wa), t(ba)
    ref = torch.clamp(B - 0.5 * (torch.relu(X * W) + B), min=-1.0)
    ref = F.gelu(ref, approximate="tanh") / 4.0
    ref = torch.log_softmax(torch.softmax(ref, dim=1), dim=-1).reshape(2, -1)
    bld.expect("chain", v, ref)
    bld.run_and_check(rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# Activations and scalar ops


def test_activations_and_scalar_ops():
    bld = Builder()
    xa = np.concatenate([np.linspace(-8, 8, 97, dtype=np.float32), [0.0, -0.0, 3.0, -3.0, 1e-8, 40.0, -40.0, -100.0]])
    xa = np.concatenate([xa, rand(147)]).astype(np.float32).reshape(3, 2, 42)
    x = bld.input(xa)
    X = t(xa)
    S = bld.scalar

    def unary(label, op, args, ref):
        out = bld.call(op, [x] + args, bld.tensor(xa.shape))
        bld.expect(label, out, ref)

    unary("relu", "aten::relu.out", [], torch.relu(X))
    unary("hardtanh", "aten::hardtanh.out", [S("float", -0.5), S("int", 2)], F.hardtanh(X, -0.5, 2.0))
    unary("clamp both", "aten::clamp.out", [S("float", -1.5), S("float", 2.5)], torch.clamp(X, -1.5, 2.5))
    unary("clamp min only", "aten::clamp.out", [S("int", -1), S("none")], torch.clamp(X, min=-1))
    unary("clamp max only", "aten::clamp.out", [S("none"), S("float", 0.25)], torch.clamp(X, max=0.25))
    unary("clamp none", "aten::clamp.out", [S("none"), S("none")], X.clone())
    unary("clamp min>max", "aten::clamp.out", [S("float", 1.0), S("float", -1.0)], torch.clamp(X, 1.0, -1.0))
    unary("sigmoid", "aten::sigmoid.out", [], torch.sigmoid(X))
    unary("tanh", "aten::tanh.out", [], torch.tanh(X))
    unary("hardswish", "aten::hardswish.out", [], F.hardswish(X))
    unary("hardsigmoid", "aten::hardsigmoid.out", [], F.hardsigmoid(X))
    unary("gelu none", "aten::gelu.out", [S("string", "none")], F.gelu(X))
    unary("gelu tanh", "aten::gelu.out", [S("string", "tanh")], F.gelu(X, approximate="tanh"))
    unary("leaky_relu", "aten::leaky_relu.out", [S("float", 0.1)], F.leaky_relu(X, 0.1))
    unary("add scalar", "aten::add.Scalar_out", [S("float", 2.5), S("int", 3)], torch.add(X, 2.5, alpha=3))
    unary("sub scalar", "aten::sub.Scalar_out", [S("int", 2), S("float", 0.5)], torch.sub(X, 2, alpha=0.5))
    unary("mul scalar", "aten::mul.Scalar_out", [S("float", -1.25)], X * -1.25)
    unary("div scalar", "aten::div.Scalar_out", [S("float", 3.0)], X / 3.0)
    unary("mul bool scalar", "aten::mul.Scalar_out", [S("bool", True)], X * True)
    bld.run_and_check(rtol=2e-6, atol=1e-6, tolerances={"sigmoid": (1e-5, 1e-6), "tanh": (1e-5, 1e-6), "gelu none": (1e-5, 1e-6), "gelu tanh": (1e-5, 1e-6)})


def test_softmax_any_dim_and_stable():
    bld = Builder()
    xa = rand(3, 4, 5, scale=30.0)  # large logits: exp would overflow without the max shift
    x = bld.input(xa)
    X = t(xa)
    for dim in (0, 1, 2, -1, -3):
        for op, fn in (("aten::_softmax.out", torch.softmax), ("aten::_log_softmax.out", torch.log_softmax)):
            out = bld.call(op, [x, bld.scalar("int", dim), bld.scalar("bool", False)], bld.tensor(xa.shape))
            bld.expect(f"{op} dim={dim}", out, fn(X, dim=dim))
    ya = rand(7)
    y = bld.input(ya)
    out = bld.call("aten::_softmax.out", [y, bld.scalar("int", 0), bld.scalar("bool", False)], bld.tensor((7,)))
    bld.expect("softmax 1-D", out, torch.softmax(t(ya), 0))
    bld.run_and_check(rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# Shape ops


def add_shape_cases(bld: Builder):
    S = bld.scalar
    xa = rand(2, 3, 4, 5)
    x = bld.input(xa)
    X = t(xa)

    def check(label, op, args, ref):
        ref = ref.contiguous()
        out = bld.call(op, args, bld.tensor(tuple(ref.shape)))
        bld.expect(label, out, ref)

    # cat along several dims, including negative and a legacy empty 1-D tensor.
    ya, za = rand(2, 1, 4, 5), rand(2, 2, 4, 5)
    y, z = bld.input(ya), bld.input(za)
    e = bld.input(np.zeros((0,), np.float32))
    check("cat dim1", "aten::cat.out", [S("tensor_list", [x, y, e, z]), S("int", 1)], torch.cat([X, t(ya), t(za)], 1))
    check("cat dim-4", "aten::cat.out", [S("tensor_list", [x, x]), S("int", -4)], torch.cat([X, X], -4))
    wa = rand(2, 3, 4, 2)
    w = bld.input(wa)
    check("cat dim-1", "aten::cat.out", [S("tensor_list", [w, x, w]), S("int", -1)], torch.cat([t(wa), X, t(wa)], -1))

    # split_with_sizes_copy: outs are a tensor list, the op returns nothing.
    parts = [bld.tensor((2, 3, n, 5)) for n in (1, 0, 3)]
    bld.p.instructions.append(
        Instruction("aten::split_with_sizes_copy.out", [x, S("int_list", [1, 0, 3]), S("int", -2), S("tensor_list", parts)])
    )
    for v, ref in zip(parts, torch.split_with_sizes(X, [1, 0, 3], dim=-2)):
        if ref.numel():
            bld.expect("split", v, ref)

    check("select", "aten::select_copy.int_out", [x, S("int", -3), S("int", -1)], X.select(-3, -1))
    check("select dim0", "aten::select_copy.int_out", [x, S("int", 0), S("int", 1)], X.select(0, 1))
    check("permute", "aten::permute_copy.out", [x, S("int_list", [0, 2, -1, 1])], X.permute(0, 2, 3, 1))
    check("permute rev", "aten::permute_copy.out", [x, S("int_list", [3, 2, 1, 0])], X.permute(3, 2, 1, 0))
    check("view", "aten::view_copy.out", [x, S("int_list", [6, -1])], X.reshape(6, -1))
    check("slice step", "aten::slice_copy.Tensor_out", [x, S("int", -1), S("none"), S("int", -1), S("int", 2)], X[..., :-1:2])
    check("slice oob", "aten::slice_copy.Tensor_out", [x, S("int", 1), S("int", -100), S("int", 100), S("int", 1)], X[:, -100:100])
    check("slice start", "aten::slice_copy.Tensor_out", [x, S("int", 2), S("int", 1), S("none"), S("int", 3)], X[:, :, 1::3])
    check("slice huge step", "aten::slice_copy.Tensor_out", [x, S("int", 1), S("int", 1), S("int", 2**40), S("int", 2**40)], X[:, 1 :: 2**40])
    check("slice empty", "aten::slice_copy.Tensor_out", [x, S("int", 3), S("int", 4), S("int", 2), S("int", 1)], X[..., 4:2])
    check("unsqueeze -1", "aten::unsqueeze_copy.out", [x, S("int", -1)], X.unsqueeze(-1))
    check("unsqueeze 0", "aten::unsqueeze_copy.out", [x, S("int", 0)], X.unsqueeze(0))
    qa = rand(1, 3, 1, 2)
    q = bld.input(qa)
    Q = t(qa)
    check("squeeze", "aten::squeeze_copy.dims_out", [q, S("int_list", [0, 1, -2])], Q.squeeze((0, 1, -2)))
    check("expand", "aten::expand_copy.out", [q, S("int_list", [2, -1, 3, 4, -1]), S("bool", False)], Q.expand(2, -1, 3, 4, -1))
    check("clone", "aten::clone.out", [x, S("none")], X.clone())

    ua = rand(1, 2, 3, 4)
    u = bld.input(ua)
    U = t(ua)
    check("upsample x2", "aten::upsample_nearest2d.vec_out", [u, S("none"), S("float_list", [2.0, 2.0])], F.interpolate(U, scale_factor=2.0, mode="nearest"))
    check("upsample x3", "aten::upsample_nearest2d.vec_out", [u, S("none"), S("float_list", [3.0, 3.0])], F.interpolate(U, scale_factor=3.0, mode="nearest"))
    check("upsample size", "aten::upsample_nearest2d.vec_out", [u, S("int_list", [7, 3]), S("none")], F.interpolate(U, size=(7, 3), mode="nearest"))


def add_aliased_view_cases(bld: Builder):
    """view/unsqueeze/squeeze whose out is the same memory as self."""
    xa = rand(4, 6)
    x = bld.input(xa)
    m = bld.call("aten::clone.out", [x, bld.scalar("none")], bld.tensor((4, 6)))
    v = bld.call("aten::view_copy.out", [m, bld.scalar("int_list", [3, 8])], bld.tensor((3, 8), alias_of=m))
    u = bld.call("aten::unsqueeze_copy.out", [v, bld.scalar("int", 1)], bld.tensor((3, 1, 8), alias_of=v))
    s = bld.call("aten::squeeze_copy.dims_out", [u, bld.scalar("int_list", [1])], bld.tensor((3, 8), alias_of=u))
    bld.expect("aliased views", s, t(xa).reshape(3, 8))


def add_zero_dim_cases(bld: Builder):
    """Results and inputs with no dims."""
    S = bld.scalar
    va = rand(5)
    v = bld.input(va)
    out = bld.call("aten::select_copy.int_out", [v, S("int", 0), S("int", -2)], bld.tensor(()))
    bld.expect("select to 0-dim", out, t(va)[-2])
    qa = rand(1, 1)
    out = bld.call("aten::squeeze_copy.dims_out", [bld.input(qa), S("int_list", [0, 1])], bld.tensor(()))
    bld.expect("squeeze to 0-dim", out, t(qa).squeeze())
    sa = np.array(1.5, np.float32)
    out = bld.call("aten::expand_copy.out", [bld.input(sa), S("int_list", [2, 3]), S("bool", False)], bld.tensor((2, 3)))
    bld.expect("expand 0-dim", out, t(sa).expand(2, 3))


def add_dtype_and_layout_cases(bld: Builder):
    """Shape ops copy elements of any dtype; clone converts layouts."""
    S = bld.scalar
    xa = RNG.integers(-128, 128, (2, 3, 2, 4)).astype(np.int8)
    ia = RNG.integers(-(2**40), 2**40, (2, 3)).astype(np.int64)
    x = bld.input(xa, "int8")
    i = bld.input(ia, "int64")
    X, I = torch.from_numpy(xa), torch.from_numpy(ia)

    def check(label, op, args, ref, dtype, dim_order=None, stored=None):
        out = bld.call(op, args, bld.tensor(tuple(ref.shape), dtype=dtype, dim_order=dim_order))
        bld.expect(label, out, ref.contiguous() if stored is None else stored)

    check("int8 permute", "aten::permute_copy.out", [x, S("int_list", [3, 1, 0, 2])], X.permute(3, 1, 0, 2), "int8")
    check("int8 cat", "aten::cat.out", [S("tensor_list", [x, x]), S("int", 2)], torch.cat([X, X], 2), "int8")
    check("int8 upsample", "aten::upsample_nearest2d.vec_out", [x, S("int_list", [4, 8]), S("none")],
          F.interpolate(X.float(), size=(4, 8), mode="nearest").to(torch.int8), "int8")
    check("int64 slice", "aten::slice_copy.Tensor_out", [i, S("int", 1), S("int", 1), S("none"), S("int", 1)], I[:, 1:], "int64")
    check("int64 expand", "aten::expand_copy.out", [i, S("int_list", [2, 2, 3]), S("bool", False)], I.expand(2, 2, 3), "int64")
    # clone converts between layouts: a channels-last input stores N,H,W,C.
    ca = rand(1, 3, 2, 4)
    nhwc = np.ascontiguousarray(ca.transpose(0, 2, 3, 1)).reshape(ca.shape)  # logical shape, stored bytes
    c = bld.input(nhwc, dim_order=(0, 2, 3, 1))
    check("clone to contiguous", "aten::clone.out", [c, S("none")], t(ca), "float32")
    check("clone to channels-last", "aten::clone.out", [bld.input(ca), S("none")], t(ca), "float32", (0, 2, 3, 1), nhwc)


def test_shape_ops():
    # One program (one native build) for every shape-op case; labels name the failing case.
    bld = Builder()
    add_shape_cases(bld)
    add_aliased_view_cases(bld)
    add_dtype_and_layout_cases(bld)
    add_zero_dim_cases(bld)
    bld.run_and_check(rtol=0, atol=0)


# --------------------------------------------------------------------------
# Rejected arguments fail cleanly


BAD_CASES = [
    ("aten::add.out", lambda b, x: [x, b.input(rand(2, 1)), b.scalar("int", 1)], (2, 3, 4)),  # not broadcastable
    ("aten::mul.out", lambda b, x: [x, b.input(rand(4))], (2, 3, 5)),  # wrong out shape
    ("aten::gelu.out", lambda b, x: [x, b.scalar("string", "fast")], (2, 3, 4)),
    ("aten::_softmax.out", lambda b, x: [x, b.scalar("int", 3), b.scalar("bool", False)], (2, 3, 4)),
    ("aten::select_copy.int_out", lambda b, x: [x, b.scalar("int", 1), b.scalar("int", 3)], (2, 4)),
    ("aten::permute_copy.out", lambda b, x: [x, b.scalar("int_list", [0, 0, 1])], (2, 2, 3)),
    ("aten::view_copy.out", lambda b, x: [x, b.scalar("int_list", [5, 5])], (5, 5)),
    ("aten::slice_copy.Tensor_out", lambda b, x: [x, b.scalar("int", 0), b.scalar("none"), b.scalar("none"), b.scalar("int", 0)], (2, 3, 4)),
]


@pytest.mark.parametrize("bad", range(len(BAD_CASES)))
def test_bad_arguments_fail_cleanly(bad):
    bld = Builder()
    x = bld.input(rand(2, 3, 4))
    # Every program first calls each operator once with valid arguments, so
    # all cases share one native build; then the bad call must fail by itself.
    valid = {
        "aten::add.out": ([x, x, bld.scalar("int", 1)], (2, 3, 4)),
        "aten::mul.out": ([x, x], (2, 3, 4)),
        "aten::gelu.out": ([x, bld.scalar("string", "none")], (2, 3, 4)),
        "aten::_softmax.out": ([x, bld.scalar("int", 2), bld.scalar("bool", False)], (2, 3, 4)),
        "aten::select_copy.int_out": ([x, bld.scalar("int", 1), bld.scalar("int", 2)], (2, 4)),
        "aten::permute_copy.out": ([x, bld.scalar("int_list", [2, 0, 1])], (4, 2, 3)),
        "aten::view_copy.out": ([x, bld.scalar("int_list", [4, 6])], (4, 6)),
        "aten::slice_copy.Tensor_out": ([x, bld.scalar("int", 0), bld.scalar("none"), bld.scalar("none"), bld.scalar("int", 1)], (2, 3, 4)),
    }
    for op, (args, shape) in valid.items():
        bld.p.outputs.append(bld.call(op, args, bld.tensor(shape)))
    op, make_args, out_shape = BAD_CASES[bad]
    bld.p.outputs.append(bld.call(op, make_args(bld, x), bld.tensor(out_shape)))
    with pytest.raises(HostRunError, match=f"KernelFailed {len(valid)}"):
        run_on_host(bld.p, bld.feeds)
