"""Portable math / reduction / nn kernels taken from ExecuTorch's portable list (topk, elu, glu,
mean.dtype_out, max/min.unary_out, prod.out, var_mean, 3-d pads, cdist/pdist, masked_scatter, batch
norm) on the host runner against PyTorch. One program per test holds many instructions."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction
from tests.test_ops_reduce import Builder, sample
from tests.op_check import check

RNG_TIES = np.random.default_rng(7)


def _dim_or_none(bld, dims):
    return bld.scalar("none") if dims is None else bld.scalar("int_list", dims)


def call2(bld, op, args, a, b):
    """An instruction with two out tensors (and the tuple it returns)."""
    bld.p.instructions.append(Instruction(op, list(args) + [a, b, bld.scalar("tensor_list", [a, b])]))


def run_exact(bld):
    outs = run_on_host(bld.p, bld.feeds)
    for (label, want), got in zip(bld.expected, outs):
        assert got.shape == want.shape, label
        assert got.dtype == want.dtype, label
        np.testing.assert_array_equal(got, want, err_msg=label)  # NaN == NaN here


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_topk(dtype):
    bld = Builder()
    xa = (RNG_TIES.permutation(140) - 70).reshape(4, 7, 5).astype(dtype)  # distinct: no ties
    if dtype == "float32":
        xa = xa * np.float32(0.37)
        xa[1, 2, 3] = np.nan
        xa[2, 5, 1] = np.nan
        xa[3, 4, 2] = np.inf
        xa[0, 0, 0] = -np.inf
    x = bld.input(xa, dtype)
    tx = torch.from_numpy(xa)
    for dim in (0, 1, -1):
        for k in (0, 1, 3, tx.shape[dim]):
            for largest in (True, False):
                want_v, want_i = torch.topk(tx, k, dim=dim, largest=largest)
                args = [x, bld.scalar("int", k), bld.scalar("int", dim), bld.scalar("bool", largest),
                        bld.scalar("bool", True)]
                v = bld.p.add_tensor(tuple(want_v.shape), dtype)
                i = bld.p.add_tensor(tuple(want_i.shape), "int64")
                call2(bld, "aten::topk.values", args, v, i)
                bld.expect(f"topk v {dim} {k} {largest}", v, want_v)
                bld.expect(f"topk i {dim} {k} {largest}", i, want_i)
    run_exact(bld)  # no ties among numbers here, so the indices are exact


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_topk_ties_like_pytorch(dtype):
    """Many ties (and NaN): slices of up to 128 elements run ATen's selection algorithms, so values
    and indices equal PyTorch CPU's exactly, sorted or not (partial_sort when k * 64 <= n, else
    nth_element + sort)."""
    bld = Builder()
    for shape, dim, ks in (((6, 9), 1, (1, 2, 4, 8, 9)), ((5, 128), 1, (1, 2, 3, 50, 128)),
                           ((70, 3), 0, (1, 2, 35, 70))):
        xa = RNG_TIES.integers(0, 4, shape).astype(dtype)
        if dtype == "float32":
            xa[RNG_TIES.random(shape) < 0.1] = np.nan
        x = bld.input(xa, dtype)
        tx = torch.from_numpy(xa)
        for k in ks:
            for largest in (True, False):
                for sorted_ in (True, False):
                    want_v, want_i = torch.topk(tx, k, dim=dim, largest=largest, sorted=sorted_)
                    v = bld.p.add_tensor(tuple(want_v.shape), dtype)
                    i = bld.p.add_tensor(tuple(want_i.shape), "int64")
                    call2(bld, "aten::topk.values", [x, bld.scalar("int", k), bld.scalar("int", dim),
                                                     bld.scalar("bool", largest), bld.scalar("bool", sorted_)], v, i)
                    bld.expect(f"v {shape} {k} {largest} {sorted_}", v, want_v)
                    bld.expect(f"i {shape} {k} {largest} {sorted_}", i, want_i)
    s = bld.input(np.array(2.5, dtype=np.float32))
    want_v, want_i = torch.topk(torch.tensor(2.5), 1)
    v0 = bld.p.add_tensor((), "float32")
    i0 = bld.p.add_tensor((), "int64")
    call2(bld, "aten::topk.values", [s, bld.scalar("int", 1), bld.scalar("int", 0), bld.scalar("bool", True),
                                     bld.scalar("bool", True)], v0, i0)
    bld.expect("0-dim v", v0, want_v)
    bld.expect("0-dim i", i0, want_i)
    run_exact(bld)


def test_topk_long_slices():
    """Slices longer than 128: values exact, indices point at them, distinct, equal values lowest index
    first (PyTorch's own tie order there is its sort's)."""
    bld = Builder()
    xa = RNG_TIES.integers(0, 5, (3, 300)).astype(np.float32)
    xa[1, 7] = np.nan
    x = bld.input(xa)
    tx = torch.from_numpy(xa)
    cases = []
    for k in (1, 4, 150, 300):
        for largest in (True, False):
            want_v, _ = torch.topk(tx, k, dim=1, largest=largest)
            v = bld.p.add_tensor(tuple(want_v.shape), "float32")
            i = bld.p.add_tensor(tuple(want_v.shape), "int64")
            call2(bld, "aten::topk.values", [x, bld.scalar("int", k), bld.scalar("int", 1),
                                             bld.scalar("bool", largest), bld.scalar("bool", True)], v, i)
            bld.p.outputs += [v, i]
            cases.append((k, largest, want_v.numpy()))
    outs = run_on_host(bld.p, bld.feeds)
    for n, (k, largest, want_v) in enumerate(cases):
        got_v, got_i = outs[2 * n], outs[2 * n + 1]
        label = f"k={k} largest={largest}"
        np.testing.assert_array_equal(got_v, want_v, err_msg=label)
        np.testing.assert_array_equal(np.take_along_axis(xa, got_i, axis=1), got_v, err_msg=label)
        for row_v, row_i in zip(got_v.tolist(), got_i.tolist()):
            assert len(set(row_i)) == k, label
            for a in range(k - 1):
                if row_v[a] == row_v[a + 1]:
                    assert row_i[a] < row_i[a + 1], label


def test_elu_glu_and_whole_tensor_reductions():
    bld = Builder()
    xa = sample((3, 4, 6), "float32") * 2
    x = bld.input(xa)
    tx = torch.from_numpy(xa)
    for alpha, scale, input_scale in ((1.0, 1.0, 1.0), (0.5, 1.0, 1.0), (1.6732632423543772, 1.0507009873554805, 1.0),
                                      (2.0, 0.7, 1.5)):
        want = torch.ops.aten.elu(tx, alpha, scale, input_scale)
        o = bld.call("aten::elu.out", [x, bld.scalar("float", alpha), bld.scalar("float", scale),
                                       bld.scalar("float", input_scale)], want.shape, "float32")
        bld.expect(f"elu {alpha} {scale} {input_scale}", o, want)
    for dim in (0, 1, 2, -1, -2):
        if tx.shape[dim] % 2:
            continue
        want = F.glu(tx, dim)
        o = bld.call("aten::glu.out", [x, bld.scalar("int", dim)], want.shape, "float32")
        bld.expect(f"glu {dim}", o, want)
    for op, fn in (("max", torch.max), ("min", torch.min)):
        want = fn(tx)
        o = bld.call(f"aten::{op}.unary_out", [x], (), "float32")
        bld.expect(op, o, want)
    o = bld.call("aten::mean.dtype_out", [x, bld.scalar("none")], (), "float32")
    bld.expect("mean", o, tx.mean())
    small = sample((2, 3), "float32")
    xs = bld.input(small)
    o = bld.call("aten::prod.out", [xs, bld.scalar("none")], (), "float32")
    bld.expect("prod", o, torch.from_numpy(small).prod())
    for dims in (None, [0], [-1], [1, 2], [0, 2]):
        for keepdim in (False, True):
            for correction in (None, 0, 1, 2.5):
                want_v, want_m = torch.var_mean(tx, dim=dims, correction=correction, keepdim=keepdim)
                c = bld.scalar("none") if correction is None else bld.scalar(
                    "float" if isinstance(correction, float) else "int", correction)
                v = bld.p.add_tensor(tuple(want_v.shape), "float32")
                m = bld.p.add_tensor(tuple(want_m.shape), "float32")
                call2(bld, "aten::var_mean.correction_out", [x, _dim_or_none(bld, dims), c, bld.scalar("bool", keepdim)],
                      v, m)
                bld.expect(f"var {dims} {keepdim} {correction}", v, want_v)
                bld.expect(f"mean {dims} {keepdim} {correction}", m, want_m)
    bld.run_and_check(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_whole_tensor_reductions_ints(dtype):
    bld = Builder()
    xa = sample((3, 5), dtype) if dtype == "bool" else RNG_TIES.integers(-4, 5, (3, 5)).astype(dtype)
    x = bld.input(xa, dtype)
    tx = torch.from_numpy(xa)
    for op, fn in (("max", torch.max), ("min", torch.min)):
        o = bld.call(f"aten::{op}.unary_out", [x], (), dtype)
        bld.expect(op, o, fn(tx))
    o = bld.call("aten::prod.out", [x, bld.scalar("none")], (), "int64")
    bld.expect("prod", o, tx.prod())
    if dtype != "bool":
        o = bld.call("aten::prod.out", [x, bld.scalar("int", 6)], (), "float32")  # dtype=float32
        bld.expect("prod float", o, tx.prod(dtype=torch.float32))
        o = bld.call("aten::mean.dtype_out", [x, bld.scalar("int", 6)], (), "float32")
        bld.expect("mean float", o, tx.mean(dtype=torch.float32))
    run_exact(bld)


def test_nan_whole_tensor():
    bld = Builder()
    xa = sample((4, 5), "float32")
    xa[2, 3] = np.nan
    x = bld.input(xa)
    tx = torch.from_numpy(xa)
    for op, fn in (("max", torch.max), ("min", torch.min)):
        o = bld.call(f"aten::{op}.unary_out", [x], (), "float32")
        bld.expect(op, o, fn(tx))
    o = bld.call("aten::mean.dtype_out", [x, bld.scalar("none")], (), "float32")
    bld.expect("mean", o, tx.mean())
    run_exact(bld)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad3d(mode):
    op = "aten::reflection_pad3d.out" if mode == "reflect" else "aten::replication_pad3d.out"
    bld = Builder()
    for dtype in ("float32", "int64", "int8"):
        for shape in ((2, 3, 4, 5), (1, 2, 3, 4, 5)):
            xa = sample(shape, dtype)
            x = bld.input(xa, dtype)
            tx = torch.from_numpy(xa)
            for pad in ((1, 1, 1, 1, 1, 1), (0, 2, 1, 0, 2, 1), (3, 0, 0, 2, 0, 0)):
                want = F.pad(tx.double() if dtype == "int8" else tx, pad, mode=mode).to(tx.dtype)
                o = bld.call(op, [x, bld.scalar("int_list", list(pad))], want.shape, dtype)
                bld.expect(f"{dtype} {shape} {pad}", o, want)
    run_exact(bld)


def test_cdist_pdist():
    bld = Builder()
    for s1, s2 in (((5, 3), (4, 3)), ((2, 5, 3), (2, 6, 3)), ((2, 1, 4, 3), (3, 5, 3)), ((30, 4), (27, 4))):
        a, b = sample(s1, "float32"), sample(s2, "float32")
        a[0, ...] = 0.0
        xa, xb = bld.input(a), bld.input(b)
        for p in (0.0, 1.0, 2.0, 3.0, 0.5, float("inf")):
            want = torch.ops.aten._cdist_forward(torch.from_numpy(a), torch.from_numpy(b), p, None)
            o = bld.call("aten::_cdist_forward.out", [xa, xb, bld.scalar("float", p), bld.scalar("none")],
                         want.shape, "float32")
            bld.expect(f"cdist {s1} {s2} {p}", o, want)
    for n in (1, 2, 6):
        a = sample((n, 4), "float32")
        a[-1] = a[0]
        x = bld.input(a)
        for p in (0.0, 1.0, 2.0, 1.5, float("inf")):
            want = F.pdist(torch.from_numpy(a), p)
            o = bld.call("aten::_pdist_forward.out", [x, bld.scalar("float", p)], want.shape, "float32")
            bld.expect(f"pdist {n} {p}", o, want)
    bld.run_and_check(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_masked_scatter(dtype):
    bld = Builder()
    for self_shape, mask_shape in (((3, 4), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 1)), ((2, 3, 4), (2, 1, 4))):
        xa = sample(self_shape, dtype)
        ma = sample(mask_shape, "bool")
        n = int(np.broadcast_to(ma, np.broadcast_shapes(self_shape, mask_shape)).sum())
        for extra in (0, 3):
            src = sample((n + extra,), dtype)
            want = torch.from_numpy(xa).masked_scatter(torch.from_numpy(ma), torch.from_numpy(src))
            o = bld.call("aten::masked_scatter.out", [bld.input(xa, dtype), bld.input(ma, "bool"),
                                                      bld.input(src, dtype)], want.shape, dtype)
            bld.expect(f"{self_shape} {mask_shape} {extra}", o, want)
    run_exact(bld)


def test_masked_scatter_short_source_fails():
    bld = Builder()
    mask = np.ones((3, 4), dtype=np.bool_)
    o = bld.call("aten::masked_scatter.out", [bld.input(sample((3, 4), "float32")), bld.input(mask, "bool"),
                                              bld.input(sample((11,), "float32"))], (3, 4), "float32")
    bld.p.outputs.append(o)
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(bld.p, bld.feeds)


@pytest.mark.parametrize("op,args,shapes", [
    ("aten::topk.values", lambda b: [b.scalar("int", 6), b.scalar("int", 1), b.scalar("bool", True),
                                     b.scalar("bool", True)], [(3, 6, 5), (3, 6, 5)]),  # k > size
    ("aten::topk.values", lambda b: [b.scalar("int", 2), b.scalar("int", 3), b.scalar("bool", True),
                                     b.scalar("bool", True)], [(3, 4, 2), (3, 4, 2)]),  # bad dim
    ("aten::glu.out", lambda b: [b.scalar("int", 2)], [(3, 4, 2)]),  # odd size
    ("aten::reflection_pad3d.out", lambda b: [b.scalar("int_list", [5, 0, 0, 0, 0, 0])], [(3, 4, 10)]),  # pad >= size
    ("aten::_pdist_forward.out", lambda b: [b.scalar("float", 2.0)], [(3,)]),  # not 2-d
    ("aten::_cdist_forward.out", lambda b: [b.input(sample((2, 5), "float32")), b.scalar("float", -1.0),
                                            b.scalar("none")], [(3, 4, 2)]),  # p < 0
])
def test_bad_arguments_fail_cleanly(op, args, shapes):
    bld = Builder()
    x = bld.input(sample((3, 4, 5), "float32"))
    extra = args(bld)
    outs = [bld.p.add_tensor(s, "float32" if k == 0 else "int64") for k, s in enumerate(shapes)]
    ret = outs[0] if len(outs) == 1 else bld.scalar("tensor_list", outs)
    bld.p.instructions.append(Instruction(op, [x] + extra + outs + [ret]))
    bld.p.outputs.append(outs[0])
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(bld.p, bld.feeds)


MODEL_FILE = '''import torch


class M(torch.nn.Module):
    def forward(self, x):
        return {body}


def model():
    return M()


def example_inputs():
    return (torch.randn(2, 5),)
'''


@pytest.mark.parametrize("body,op,hint", [
    ("torch.nonzero(x > 0).float() * 2", "aten::nonzero", "torch.where(cond, x, 0)"),
    ("x[x > 0] * 2", "aten::index.Tensor", "torch.where(mask, x, 0)"),
    ("torch.masked_select(x, x > 0) + 1", "aten::masked_select", "torch.where(mask, x, 0)"),
    ("torch.unique(x)", "aten::_unique2", "torch.arange(K)"),
    ("torch.unique_consecutive(x)", "aten::unique_consecutive", "torch.arange(K)"),
])
def test_data_dependent_shapes_refused(tmp_path, body, op, hint):
    """Ops whose output shape depends on the data are refused at build time, naming the op, why, what to
    write instead and the user's source line."""
    from mcu_gen.api import build
    from mcu_gen.capture.export import UnsupportedOperatorError

    path = tmp_path / "dd_model.py"
    path.write_text(MODEL_FILE.format(body=body))
    with pytest.raises(UnsupportedOperatorError) as e:
        build(str(path), board="mps2-an505", out=str(tmp_path / "out"))
    msg = str(e.value)
    assert op in msg and "depends on the input data" in msg and "static shapes" in msg, msg
    assert hint in msg, msg
    assert f"{path}:6" in msg and body in msg, msg


def test_batch_norm_legit_kernel():
    """_native_batch_norm_legit.out: training (batch statistics, running stats updated in place) and
    eval (running stats) against ATen's _native_batch_norm_legit."""
    bld = Builder()
    xa = sample((3, 4, 5, 2), "float32") * 2 + 0.5
    w, b = RNG_TIES.random(4).astype(np.float32) + 0.5, RNG_TIES.standard_normal(4).astype(np.float32)
    x, wv, bv = bld.input(xa), bld.input(w), bld.input(b)
    want = []
    for training, affine in ((True, True), (True, False), (False, True)):
        rm0 = RNG_TIES.standard_normal(4).astype(np.float32)
        rv0 = RNG_TIES.random(4).astype(np.float32) + 0.5
        rm, rv = bld.input(rm0), bld.input(rv0)
        trm, trv = torch.from_numpy(rm0.copy()), torch.from_numpy(rv0.copy())
        y, m, s = torch.ops.aten._native_batch_norm_legit(
            torch.from_numpy(xa), torch.from_numpy(w) if affine else None, torch.from_numpy(b) if affine else None,
            trm, trv, training, 0.3, 1e-4)
        outs = [bld.p.add_tensor(tuple(t.shape), "float32") for t in (y, m, s)]
        bld.p.instructions.append(Instruction("aten::_native_batch_norm_legit.out", [
            x, wv if affine else bld.scalar("none"), bv if affine else bld.scalar("none"), rm, rv,
            bld.scalar("bool", training), bld.scalar("float", 0.3), bld.scalar("float", 1e-4)]
            + outs + [bld.scalar("tensor_list", outs)]))
        bld.p.outputs += [outs[0], outs[1], outs[2], rm, rv]
        want += [y, m, s, trm, trv]
    got = run_on_host(bld.p, bld.feeds)
    assert len(got) == len(want)
    for k, (g, t) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-5, atol=1e-5, err_msg=str(k))


class TrainingBatchNorm(torch.nn.Module):
    """F.batch_norm(training=True) with running stats in registered buffers (state)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("rm", torch.zeros(3))
        self.register_buffer("rv", torch.ones(3))
        self.w = torch.nn.Parameter(torch.rand(3) + 0.5)
        self.b = torch.nn.Parameter(torch.randn(3))

    def forward(self, x):
        y = F.batch_norm(x, self.rm, self.rv, self.w, self.b, training=True, momentum=0.2, eps=1e-5)
        return y, self.rm * 1.0, self.rv * 1.0


def test_batch_norm_training_mode_in_a_model():
    """Lowered to _native_batch_norm_legit.out updating the state in place (no copy), the outputs and the
    running stats as PyTorch's, step by step in the reference and on the host build."""
    import copy

    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import ModelSpec
    from mcu_gen.plan import inplace_pass
    from mcu_gen.reference import run_reference

    torch.manual_seed(0)
    module = TrainingBatchNorm()
    xs = [torch.randn(2, 3, 4, 4) * 2 + 1 for _ in range(3)]
    p = export_model(ModelSpec(copy.deepcopy(module), (xs[0],)))
    assert [i.op for i in p.instructions].count("aten::_native_batch_norm_legit.out") == 1
    assert not any(i.op in ("aten::copy_", "aten::clone.out") and set(i.args) & set(p.states) for i in p.instructions)
    inplace_pass.plan_memory(p)
    m = copy.deepcopy(module)
    state = {}
    for step, x in enumerate(xs):
        with torch.no_grad():
            want = m(x)
        got = run_reference(p, [x.numpy()], state)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"step {step}")
    # (the host runner is built without state support; the kernel itself: test_batch_norm_legit_kernel)


BN_MODEL_FILE = '''import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("rm", torch.zeros(3))
        self.register_buffer("rv", torch.ones(3))
        self.w = torch.nn.Parameter(torch.rand(3) + 0.5)
        self.b = torch.nn.Parameter(torch.randn(3))

    def forward(self, x):
        y = F.batch_norm(x, self.rm, self.rv, self.w, self.b, training=True, momentum=0.2, eps=1e-5)
        return y, self.rm * 1.0, self.rv * 1.0


def model():
    torch.manual_seed(0)
    return M()


def example_inputs():
    return (torch.randn(2, 3, 4, 4),)
'''


def test_batch_norm_training_mode_on_qemu(tmp_path, qemu_tools):
    """The state program (running stats updated in place by the kernel) on mps2-an505, step by step
    against PyTorch: y and the running stats after each step."""
    from mcu_gen.api import run

    path = tmp_path / "bn_train.py"
    path.write_text(BN_MODEL_FILE)
    r = run(str(path), board="mps2-an505", out=str(tmp_path / "out"))
    assert r.verified and r.n_inferences > 1 and "step by step" in r.reference, r


def test_upsample_bilinear2d_aa():
    """Antialiased bilinear resize, down and up, align_corners both ways, with and without scales. (Output
    width 1 is left out: ATen's CPU kernel then repeats the first output row in every row.)"""
    bld = Builder()
    for ih, iw in ((5, 7), (12, 9)):
        xa = sample((2, 3, ih, iw), "float32")
        x = bld.input(xa)
        tx = torch.from_numpy(xa)
        for oh, ow in ((2, 3), (5, 7), (11, 4), (1, 2), (20, 15)):
            for align in (False, True):
                want = torch.ops.aten._upsample_bilinear2d_aa(tx, [oh, ow], align)
                o = bld.call("aten::_upsample_bilinear2d_aa.out", [
                    x, bld.scalar("int_list", [oh, ow]), bld.scalar("bool", align), bld.scalar("none"),
                    bld.scalar("none")], want.shape, "float32")
                bld.expect(f"{ih}x{iw} -> {oh}x{ow} {align}", o, want)
        for sh, sw in ((0.5, 0.5), (2.0, 1.5), (0.3, 0.7)):
            want = F.interpolate(tx, scale_factor=(sh, sw), mode="bilinear", antialias=True)
            oh, ow = want.shape[2:]
            if ow == 1:
                continue
            o = bld.call("aten::_upsample_bilinear2d_aa.out", [
                x, bld.scalar("int_list", [oh, ow]), bld.scalar("bool", False), bld.scalar("float", sh),
                bld.scalar("float", sw)], want.shape, "float32")
            bld.expect(f"{ih}x{iw} scales {sh} {sw}", o, want)
    bld.run_and_check(rtol=1e-5, atol=2e-6)
