"""Portable reduction kernels (amax/amin, argmax/argmin, var) on the host runner against PyTorch.

One program per test holds many instructions, so one native build covers many cases.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction, Program

RNG = np.random.default_rng(24)


class Builder:
    def __init__(self):
        self.p = Program()
        self.feeds, self.expected = [], []
        self.p.meta["aliases"] = {}

    def input(self, array, dtype="float32") -> int:
        array = np.array(array, dtype=dtype, order="C")
        v = self.p.add_tensor(array.shape, dtype)
        self.p.inputs.append(v)
        self.feeds.append(array)
        return v

    def scalar(self, kind, value=None) -> int:
        return self.p.add_scalar(kind, value)

    def call(self, op, args, shape, dtype) -> int:
        out = self.p.add_tensor(tuple(shape), dtype)
        self.p.instructions.append(Instruction(op, list(args) + [out, out]))
        return out

    def expect(self, label, value, want: torch.Tensor):
        self.p.outputs.append(value)
        self.expected.append((label, want.numpy()))

    def run_and_check(self, rtol=1e-5, atol=1e-5):
        outs = run_on_host(self.p, self.feeds)
        for (label, want), got in zip(self.expected, outs):
            assert got.shape == want.shape, label
            assert got.dtype == want.dtype, (label, got.dtype, want.dtype)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=label)


def sample(shape, dtype):
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(np.bool_)
    if dtype == "float32":
        return RNG.standard_normal(shape).astype(np.float32)
    return RNG.integers(-50, 50, shape).astype(dtype)


DIMS = [[], [0], [-1], [1, 2], [0, 2], [-3, -1]]


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "bool"])
def test_amax_amin(dtype):
    bld = Builder()
    xa = sample((3, 4, 5), dtype)
    x = bld.input(xa, dtype)
    tx = torch.from_numpy(xa)
    for op, fn in (("amax", torch.amax), ("amin", torch.amin)):
        for dims in DIMS:
            for keepdim in (False, True):
                want = fn(tx, dim=dims, keepdim=keepdim)
                o = bld.call(f"aten::{op}.out", [x, bld.scalar("int_list", dims), bld.scalar("bool", keepdim)],
                             want.shape, dtype)
                bld.expect(f"{op} {dims} {keepdim}", o, want)
    bld.run_and_check(rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_argmax_argmin(dtype):
    bld = Builder()
    xa = sample((3, 4, 5), dtype)
    if dtype != "float32":
        xa[0, 1, :] = 7  # ties: the first index wins
    x = bld.input(xa, dtype)
    tx = torch.from_numpy(xa)
    for op, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        for dim in (None, 0, 1, -1):
            for keepdim in (False, True):
                want = fn(tx, dim=dim, keepdim=keepdim)
                d = bld.scalar("none") if dim is None else bld.scalar("int", dim)
                o = bld.call(f"aten::{op}.out", [x, d, bld.scalar("bool", keepdim)], want.shape, "int64")
                bld.expect(f"{op} {dim} {keepdim}", o, want)
    bld.run_and_check(rtol=0, atol=0)


def test_nan_propagation():
    bld = Builder()
    xa = sample((4, 6), "float32")
    xa[1, 2] = np.nan
    xa[3, 0] = np.nan
    xa[3, 4] = np.nan
    x = bld.input(xa)
    tx = torch.from_numpy(xa)
    for op, fn in (("amax", torch.amax), ("amin", torch.amin)):
        for dims in ([], [0], [1]):
            want = fn(tx, dim=dims)
            o = bld.call(f"aten::{op}.out", [x, bld.scalar("int_list", dims), bld.scalar("bool", False)], want.shape, "float32")
            bld.expect(f"{op} {dims}", o, want)
    for op, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        for dim in (None, 0, 1):
            want = fn(tx, dim=dim)
            d = bld.scalar("none") if dim is None else bld.scalar("int", dim)
            o = bld.call(f"aten::{op}.out", [x, d, bld.scalar("bool", False)], want.shape, "int64")
            bld.expect(f"{op} {dim}", o, want)
    outs = run_on_host(bld.p, bld.feeds)
    for (label, want), got in zip(bld.expected, outs):
        np.testing.assert_array_equal(got, want, err_msg=label)  # NaN == NaN here


def test_var():
    bld = Builder()
    xa = sample((3, 4, 5), "float32") * 3 + 1
    x = bld.input(xa)
    tx = torch.from_numpy(xa)
    for dims in (None, [0], [-1], [1, 2], [0, 2]):
        for keepdim in (False, True):
            for correction in (None, 0, 1, 2.5):
                want = torch.var(tx, dim=dims, correction=correction, keepdim=keepdim)
                d = bld.scalar("none") if dims is None else bld.scalar("int_list", dims)
                c = bld.scalar("none") if correction is None else bld.scalar(
                    "float" if isinstance(correction, float) else "int", correction)
                o = bld.call("aten::var.correction_out", [x, d, c, bld.scalar("bool", keepdim)], want.shape, "float32")
                bld.expect(f"var {dims} {keepdim} {correction}", o, want)
            for unbiased in (False, True):
                want = torch.var(tx, dim=dims, unbiased=unbiased, keepdim=keepdim)
                d = bld.scalar("none") if dims is None else bld.scalar("int_list", dims)
                o = bld.call("aten::var.out", [x, d, bld.scalar("bool", unbiased), bld.scalar("bool", keepdim)],
                             want.shape, "float32")
                bld.expect(f"var.out {dims} {keepdim} {unbiased}", o, want)
    bld.run_and_check(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,args,shape,dtype", [
    ("aten::amax.out", lambda b: [b.scalar("int_list", [3]), b.scalar("bool", False)], (3, 4), "float32"),  # bad dim
    ("aten::amax.out", lambda b: [b.scalar("int_list", [1]), b.scalar("bool", False)], (3, 6), "float32"),  # bad shape
    ("aten::argmax.out", lambda b: [b.scalar("int", 1), b.scalar("bool", False)], (3, 5), "int32"),  # out not int64
    ("aten::var.correction_out", lambda b: [b.scalar("int_list", [0, 0]), b.scalar("none"), b.scalar("bool", False)],
     (4, 5), "float32"),  # repeated dim
])
def test_bad_arguments_fail_cleanly(op, args, shape, dtype):
    bld = Builder()
    x = bld.input(sample((3, 4, 5), "float32"))
    o = bld.call(op, [x] + args(bld), shape, dtype)
    bld.p.outputs.append(o)
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(bld.p, bld.feeds)


def test_float_means_and_products_in_an_int8_programs_island_are_the_kernels_floats():
    """An int8 program's fp32 island that takes a mean or a product (x.mean() of a sigmoid's output, a 0-d result)
    differed from the host integer reference in the last bit: the reference ran PyTorch's order, the kernels their
    own (op_mean.cpp: four partial sums over a contiguous run then / n, else a sequential sum then * 1/n;
    mean(dtype) and prod: sequential). The reference now emulates them (fp32_emulation): the host runner's
    outputs equal it bit for bit, for every path of the kernels, and PyTorch's differ."""
    from mcu_gen.reference.integer import run_int8_reference

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 5, 301)) * np.logspace(0, 4, 301)).astype(np.float32)
    p = (1.0 + 0.01 * rng.standard_normal((4, 300))).astype(np.float32)
    bld = Builder()
    xi, pi = bld.input(x), bld.input(p)
    for dims, shape in (([2], (3, 5)), ([1], (3, 301)), ([0, 2], (5,)), ([-1, -2], (3,)), ([], ())):
        args = [xi, bld.scalar("int_list", dims), bld.scalar("bool", False), bld.scalar("none")]
        bld.p.outputs.append(bld.call("aten::mean.out", args, shape, "float32"))
    bld.p.outputs.append(bld.call("aten::mean.dtype_out", [xi, bld.scalar("none")], (), "float32"))
    bld.p.outputs.append(bld.call("aten::prod.out", [pi, bld.scalar("none")], (), "float32"))
    bld.p.outputs.append(bld.call("aten::prod.int_out", [pi, bld.scalar("int", 1), bld.scalar("bool", False),
                                                         bld.scalar("none")], (4,), "float32"))
    device, host = run_on_host(bld.p, bld.feeds), run_int8_reference(bld.p, bld.feeds)
    for k, (got, want) in enumerate(zip(device, host)):
        assert got.dtype == want.dtype and np.array_equal(got, want), k
    t = torch.from_numpy(x)
    torch_means = [t.mean(2), t.mean(1), t.mean((0, 2)), t.mean((-1, -2)), t.mean(), t.mean()]
    assert any(not np.array_equal(d, w.numpy()) for d, w in zip(device, torch_means))
    assert not np.array_equal(device[-1], torch.from_numpy(p).prod(1).numpy())
