"""Copies the memory planner removes (mcu_gen/plan/slices.py): concatenation into slices of
its output, and no-op pads/permutes as views.

- torch.cat of two convolutions along channels: the cat instruction is gone, each
  convolution writes into its slice of the output, the arena is smaller than with
  the copy, check_plan proves it, and the native run matches PyTorch.
- Zero pads and identity / size-1 permutes disappear as views.
- Concatenations the layout does not allow (along H, or with a graph input) stay.
- check_plan rejects slices that are misplaced or overlap.
- One QEMU run of the cat model, verified against PyTorch.
"""
from __future__ import annotations

import copy
import textwrap

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.plan import inplace_pass, planner, slices
from mcu_gen.capture.export import export_model
from mcu_gen.firmware.host import run_on_host
from mcu_gen.capture.model_file import load_model_file

CAT_MODEL = """
import torch
from torch import nn

class CatNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(3, 8, 1)
        self.head = nn.Conv2d(16, 4, 3, padding=1)

    def forward(self, x):
        y = torch.cat([torch.relu(self.a(x)), self.b(x)], dim=1)
        return self.head(y)

def model():
    torch.manual_seed(0)
    return CatNet().eval()

def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 3, 12, 12, generator=g),) for _ in range(count)]

def example_inputs():
    return _inputs(1, 1)[0]

def test_inputs():
    return _inputs(2, 2)
"""

NOOP_MODEL = """
import torch
import torch.nn.functional as F
from torch import nn

class NoopNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 6, 3, padding=1)
        self.b = nn.Conv2d(6, 4, 1)

    def forward(self, x):
        y = F.pad(self.a(x), (0, 0, 0, 0))
        y = y.permute(0, 1, 2, 3)
        return self.b(y).permute(1, 0, 2, 3)  # moves only the batch dim of size 1

def model():
    torch.manual_seed(0)
    return NoopNet().eval()

def example_inputs():
    return (torch.randn(1, 3, 10, 10, generator=torch.Generator().manual_seed(1)),)
"""

NESTED_MODEL = """
import torch
from torch import nn

class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(3, 4, 1)
        self.c = nn.Conv2d(3, 2, 1)
        self.l = nn.Linear(10 * 36, 5)
        self.l2 = nn.Linear(8 * 36, 4)

    def forward(self, x):
        inner = torch.cat([self.a(x), self.b(x)], 1)
        y = torch.cat([inner, torch.relu(self.c(x))], 1)  # a cat of a cat; y is a graph output
        return torch.cat([self.l(y.flatten(1)), self.l2(torch.relu(inner).flatten(1))], 1), y

def model():
    torch.manual_seed(0)
    return Nested().eval()

def example_inputs():
    return (torch.randn(1, 3, 6, 6, generator=torch.Generator().manual_seed(1)),)
"""

UNSLICEABLE_MODEL = """
import torch
from torch import nn

class Keep(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        h = torch.cat([self.a(x), self.b(x)], dim=2)  # along H with 4 channels: not one block each
        g = torch.cat([x, self.b(x)], dim=1)  # a graph input cannot be written into a slice
        return h, g

def model():
    torch.manual_seed(0)
    return Keep().eval()

def example_inputs():
    return (torch.randn(1, 3, 6, 6, generator=torch.Generator().manual_seed(1)),)
"""


def _spec(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return load_model_file(str(path))


def _ops(program):
    return [ins.op for ins in program.instructions]


def _torch(spec):
    with torch.no_grad():
        out = spec.module(*spec.example_inputs)
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("fuse", [True, False])
def test_cat_writes_producers_into_slices(tmp_path, fuse):
    spec = _spec(tmp_path, "catnet", CAT_MODEL)
    program = export_model(spec, fuse=fuse)
    assert "aten::cat.out" in _ops(program)
    with_copy = copy.deepcopy(program)
    inplace_pass.plan_memory(with_copy, remove_copies=False)
    inplace_pass.plan_memory(program)

    assert "aten::cat.out" not in _ops(program)
    assert program.meta["plan"]["removed_copies"] == ["aten::cat.out"]
    assert program.arena_size < with_copy.arena_size
    planner.check_plan(program)
    # Each conv output sits inside the cat output: first at +0, second at +8*12*12*4 bytes.
    sl = program.meta["slices"]
    assert sorted(d for _, d in sl.values()) == [0, 8 * 12 * 12 * 4]
    (out,) = {o for o, _ in sl.values()}
    for v, (o, d) in sl.items():
        assert program.values[v].offset == program.values[o].offset + d
    if not fuse:  # relu is not written in place over the conv output: its out is a slice
        assert all(step_out not in sl for _, step_out, _ in program.meta["inplace"])

    got = run_on_host(program, [x.numpy() for x in spec.example_inputs])
    want = _torch(spec)
    np.testing.assert_allclose(got[0], want[0], atol=1e-5, rtol=0)


def test_noop_pad_and_permutes_become_views(tmp_path):
    spec = _spec(tmp_path, "noopnet", NOOP_MODEL)
    program = export_model(spec)
    assert {"aten::constant_pad_nd.out", "aten::permute_copy.out"} <= set(_ops(program))
    with_copy = copy.deepcopy(program)
    inplace_pass.plan_memory(with_copy, remove_copies=False)
    inplace_pass.plan_memory(program)
    assert _ops(program) == ["mcu::conv2d.out", "mcu::conv2d.out"]
    assert sorted(program.meta["plan"]["removed_copies"]) == [
        "aten::constant_pad_nd.out", "aten::permute_copy.out", "aten::permute_copy.out"]
    assert program.arena_size < with_copy.arena_size
    assert program.tensor(program.outputs[0]).shape == (4, 1, 10, 10)
    got = run_on_host(program, [x.numpy() for x in spec.example_inputs])
    np.testing.assert_allclose(got[0], _torch(spec)[0], atol=1e-5, rtol=0)


def test_nested_cats_and_float_aligned_slices(tmp_path):
    spec = _spec(tmp_path, "nested", NESTED_MODEL)
    program = export_model(spec)
    with_copy = copy.deepcopy(program)
    inplace_pass.plan_memory(with_copy, remove_copies=False)
    inplace_pass.plan_memory(program)
    assert "aten::cat.out" not in _ops(program)
    assert program.meta["plan"]["removed_copies"] == ["aten::cat.out"] * 3
    assert program.arena_size < with_copy.arena_size
    # The last cat joins a [1, 5] and a [1, 4] fp32 tensor: its second slice is 20 bytes in.
    assert 20 in {d for _, d in program.meta["slices"].values()}
    got = run_on_host(program, [x.numpy() for x in spec.example_inputs])
    for g, w in zip(got, _torch(spec)):
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)


def test_concatenations_the_layout_does_not_allow_stay(tmp_path):
    spec = _spec(tmp_path, "keep", UNSLICEABLE_MODEL)
    program = export_model(spec)
    inplace_pass.plan_memory(program)
    assert _ops(program).count("aten::cat.out") == 2
    assert not program.meta.get("slices")
    got = run_on_host(program, [x.numpy() for x in spec.example_inputs])
    for g, w in zip(got, _torch(spec)):
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)


def test_memory_order_of_permutations():
    assert slices.keeps_memory_order((1, 8, 4, 4), [0, 1, 2, 3])
    assert slices.keeps_memory_order((1, 8, 4, 4), [1, 0, 2, 3])
    assert slices.keeps_memory_order((2, 1, 4, 1), [0, 3, 2, 1])
    assert not slices.keeps_memory_order((1, 8, 4, 4), [0, 2, 3, 1])
    assert not slices.keeps_memory_order((2, 3), [1, 0])


def test_check_plan_rejects_misplaced_and_overlapping_slices(tmp_path):
    spec = _spec(tmp_path, "catnet", CAT_MODEL)
    program = export_model(spec)
    inplace_pass.plan_memory(program)
    (a, (out, da)), (b, (_, db)) = sorted(program.meta["slices"].items(), key=lambda kv: kv[1][1])
    bad = copy.deepcopy(program)
    bad.values[b].offset += 16
    with pytest.raises(planner.PlanError, match=f"value {b} is at offset"):
        planner.check_plan(bad)
    bad = copy.deepcopy(program)
    bad.meta["slices"][b] = (out, 0)
    bad.values[b].offset = bad.values[out].offset
    with pytest.raises(planner.PlanError, match="overlap"):
        planner.check_plan(bad)
    bad = copy.deepcopy(program)
    bad.meta["slices"][b] = (out, db + 16)
    bad.values[b].offset += 16
    with pytest.raises(planner.PlanError, match="is not inside"):
        planner.check_plan(bad)


@pytest.mark.qemu
def test_cat_model_runs_verified_on_mps2_an505(tmp_path, qemu_tools):
    path = tmp_path / "catnet.py"
    path.write_text(textwrap.dedent(CAT_MODEL))
    r = mcu_gen.run(str(path), board="mps2-an505", out=tmp_path / "build")
    assert r.verified, f"max abs error {r.max_abs_error} > {r.tolerance}"
    assert r.reference == "pytorch"
    assert r.max_abs_error <= 1e-5
    plain = export_model(load_model_file(str(path)))
    inplace_pass.plan_memory(plain, remove_copies=False)
    assert r.arena_bytes < plain.arena_size
