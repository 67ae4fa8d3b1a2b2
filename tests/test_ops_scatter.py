"""Portable scatter and shape-family kernels (scatter, scatter_add, select/slice_scatter, roll, tril/triu,
stack, pixel_(un)shuffle, narrow_copy, diagonal_copy, unfold_copy, as_strided_copy, repeat_interleave)
on the host runner against PyTorch eager, one program per test; bad indices, offsets and shapes from a
program or the model's inputs: a clean kernel failure, no crash."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.plan import inplace_pass
from tests.test_ops_reduce import Builder, sample

DATA_DTYPES = ["float32", "int8", "uint8", "int16", "int32", "int64", "bool"]
REAL_DTYPES = ["float32", "int8", "uint8", "int16", "int32", "int64"]
RNG = np.random.default_rng(11)


def _data(shape, dtype):
    if dtype == "uint8":
        return RNG.integers(0, 200, shape).astype(np.uint8)
    return sample(shape, dtype)


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def _check(bld):
    # Every tensor is an input or an output here (all live at once): skip the exact placement search,
    # slow on hundreds of tensors.
    inplace_pass.plan_memory(bld.p, node_limit=0)
    bld.run_and_check(rtol=0, atol=0)


def _expect_failure(bld):
    inplace_pass.plan_memory(bld.p, node_limit=0)
    with pytest.raises(HostRunError, match="(?i)kernel|fail") as e:
        run_on_host(bld.p, bld.feeds)
    text = str(e.value).lower()
    assert "signal" not in text and "segmentation" not in text and "sanitizer" not in text


def test_scatter_src_value_add():
    bld = Builder()
    for dtype in DATA_DTYPES:
        xa = _data((3, 4, 5), dtype)
        x = bld.input(xa, dtype)
        for dim in (0, 1, 2, -1):
            for index_dtype in ("int64", "int32"):
                n = xa.shape[dim]
                ishape = [2, 3, 4]
                ishape[dim] = min(n, 3)
                # a permutation along dim: every out position written once (scatter.src's order is then moot)
                perm = np.argsort(RNG.random(ishape[:dim % 3] + [n] + ishape[dim % 3 + 1:]), axis=dim)
                ia = np.take(perm, range(ishape[dim]), axis=dim).astype(index_dtype)
                i = bld.input(ia, index_dtype)
                sa = _data((3, 4, 5), dtype)
                s = bld.input(sa, dtype)
                ti = _t(ia.astype(np.int64))
                want = torch.scatter(_t(xa), dim, ti, _t(sa))
                o = bld.call("aten::scatter.src_out", [x, bld.scalar("int", dim), i, s], want.shape, dtype)
                bld.expect(f"scatter.src {dtype} {dim} {index_dtype}", o, want)
                value = True if dtype == "bool" else (2.5 if dtype == "float32" else 7)
                want = torch.scatter(_t(xa), dim, ti, value)
                kind = "bool" if dtype == "bool" else ("float" if dtype == "float32" else "int")
                o = bld.call("aten::scatter.value_out", [x, bld.scalar("int", dim), i, bld.scalar(kind, value)],
                             want.shape, dtype)
                bld.expect(f"scatter.value {dtype} {dim} {index_dtype}", o, want)
                # duplicates accumulate (bool: or)
                da = RNG.integers(0, n, ishape).astype(index_dtype)
                di = bld.input(da, index_dtype)
                want = torch.scatter_add(_t(xa), dim, _t(da.astype(np.int64)), _t(sa))
                o = bld.call("aten::scatter_add.out", [x, bld.scalar("int", dim), di, s], want.shape, dtype)
                bld.expect(f"scatter_add {dtype} {dim} {index_dtype}", o, want)
    # empty index: out = self; 0-dim self
    xa = _data((2, 3), "float32")
    x = bld.input(xa)
    e = bld.input(np.zeros((0, 3), np.int64), "int64")
    o = bld.call("aten::scatter_add.out", [x, bld.scalar("int", 0), e, x], (2, 3), "float32")
    bld.expect("scatter_add empty", o, _t(xa))
    z = bld.input(np.array(1.5, np.float32))
    zi = bld.input(np.array([0], np.int64), "int64")
    zs = bld.input(np.array([4.0], np.float32))
    want = torch.scatter_add(torch.tensor(1.5), 0, torch.tensor([0]), torch.tensor([4.0]))
    o = bld.call("aten::scatter_add.out", [z, bld.scalar("int", 0), zi, zs], want.shape, "float32")
    bld.expect("scatter_add 0-dim", o, want)
    _check(bld)


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_scatter_out_of_range_index_fails_cleanly(index_dtype):
    """The index comes from a model input: out of range must fail the call, not write outside out.
    As in ATen, scatter takes no negative index (torch.scatter_add(x, 1, tensor([[-1]]), x) raises)."""
    ops = ["aten::scatter.src_out", "aten::scatter.value_out", "aten::scatter_add.out"]
    for bad_op, index, dim in [(0, [[0, 4]], 1), (1, [[0, -5]], 1), (2, [[3, 0]], 0), (2, [[-4, 0]], 0),
                               (0, [[-1, 0]], 1), (1, [[0, -1]], 1), (2, [[0, -1]], 0),
                               (0, [[0], [1], [2], [0]], 0)]:  # the last: index longer than src along dim 0
        bld = Builder()
        x = bld.input(sample((3, 4), "float32"))
        src = bld.input(sample((3, 5), "float32"))
        good = bld.input(np.array([[0, 1]], dtype=index_dtype), index_dtype)
        bad = bld.input(np.array(index, dtype=index_dtype), index_dtype)
        for k, op in enumerate(ops):
            last = bld.scalar("float", 1.0) if op == "aten::scatter.value_out" else src
            o = bld.call(op, [x, bld.scalar("int", dim), bad if k == bad_op else good, last], (3, 4), "float32")
            bld.p.outputs.append(o)
        _expect_failure(bld)


def test_select_and_slice_scatter():
    bld = Builder()
    for dtype in DATA_DTYPES:
        xa = _data((3, 4, 5), dtype)
        x = bld.input(xa, dtype)
        tx = _t(xa)
        for dim, index in ((0, 0), (1, -1), (2, 3), (-1, -5)):
            want = torch.select_scatter(tx, _t(_data(tx.select(dim, index).shape, dtype)), dim, index)
            sa = want.select(dim, index).numpy().copy()
            s = bld.input(sa, dtype)
            o = bld.call("aten::select_scatter.out", [x, s, bld.scalar("int", dim), bld.scalar("int", index)],
                         want.shape, dtype)
            bld.expect(f"select_scatter {dtype} {dim} {index}", o, want)
        for dim, start, end, step in ((0, None, None, 1), (1, 1, 3, 1), (2, -4, None, 2), (2, None, -1, 3),
                                      (-1, -100, 100, 2), (1, 2, 1, 1), (1, 7, 9, 1), (2, 0, 5, 7), (0, -2, -1, 1)):
            piece = tx.narrow(dim, 0, 0) if False else tx.transpose(0, dim % 3)[slice(start, end, step)].transpose(0, dim % 3)
            sa = _data(tuple(piece.shape), dtype)
            want = torch.slice_scatter(tx, _t(sa), dim, start, end, step)
            s = bld.input(sa, dtype)
            sc = lambda v: bld.scalar("none") if v is None else bld.scalar("int", v)  # noqa: E731
            o = bld.call("aten::slice_scatter.out", [x, s, bld.scalar("int", dim), sc(start), sc(end),
                                                       bld.scalar("int", step)], want.shape, dtype)
            bld.expect(f"slice_scatter {dtype} {dim} {start}:{end}:{step}", o, want)
    _check(bld)


def test_roll_tril_triu_stack():
    bld = Builder()
    for dtype in DATA_DTYPES:
        xa = _data((3, 4, 5), dtype)
        x = bld.input(xa, dtype)
        tx = _t(xa)
        for shifts, dims in (([1], [0]), ([-2], [2]), ([7], []), ([-13], []), ([1, -1], [1, 2]), ([2, 3], [-1, -1]),
                             ([0], [1]), ([4, 5, -6], [0, 1, 2])):
            want = torch.roll(tx, shifts, dims)
            o = bld.call("aten::roll.out", [x, bld.scalar("int_list", shifts), bld.scalar("int_list", dims)],
                         want.shape, dtype)
            bld.expect(f"roll {dtype} {shifts} {dims}", o, want)
        for diagonal in (0, 1, -1, 3, -2, 9, -9):
            for name, fn in (("tril", torch.tril), ("triu", torch.triu)):
                want = fn(tx, diagonal)
                o = bld.call(f"aten::{name}.out", [x, bld.scalar("int", diagonal)], want.shape, dtype)
                bld.expect(f"{name} {dtype} {diagonal}", o, want)
        ya = _data((3, 4, 5), dtype)
        y = bld.input(ya, dtype)
        for dim in (0, 1, 2, 3, -1, -4):
            want = torch.stack([tx, _t(ya), tx], dim)
            o = bld.call("aten::stack.out", [bld.scalar("tensor_list", [x, y, x]), bld.scalar("int", dim)],
                         want.shape, dtype)
            bld.expect(f"stack {dtype} {dim}", o, want)
    _check(bld)


def test_pixel_shuffle_narrow_diagonal_unfold_as_strided():
    F = torch.nn.functional
    bld = Builder()
    for dtype in DATA_DTYPES:
        pa = _data((2, 8, 3, 2), dtype)
        p = bld.input(pa, dtype)
        for r in (1, 2):
            want = F.pixel_shuffle(_t(pa), r)
            o = bld.call("aten::pixel_shuffle.out", [p, bld.scalar("int", r)], want.shape, dtype)
            bld.expect(f"pixel_shuffle {dtype} {r}", o, want)
        qa = _data((2, 1, 2, 6, 4), dtype)  # two batch dims
        q = bld.input(qa, dtype)
        want = F.pixel_unshuffle(_t(qa), 2)
        o = bld.call("aten::pixel_unshuffle.out", [q, bld.scalar("int", 2)], want.shape, dtype)
        bld.expect(f"pixel_unshuffle {dtype}", o, want)
        want = F.pixel_shuffle(want, 2)
        o = bld.call("aten::pixel_shuffle.out", [o, bld.scalar("int", 2)], want.shape, dtype)
        bld.expect(f"pixel round trip {dtype}", o, _t(qa))

        xa = _data((3, 4, 5), dtype)
        x = bld.input(xa, dtype)
        tx = _t(xa)
        for dim, start, length in ((0, 0, 3), (1, 1, 2), (2, -3, 3), (-1, 4, 1), (1, 4, 0)):
            want = torch.narrow_copy(tx, dim, start, length)
            o = bld.call("aten::narrow_copy.out", [x, bld.scalar("int", dim), bld.scalar("int", start),
                                                     bld.scalar("int", length)], want.shape, dtype)
            bld.expect(f"narrow_copy {dtype} {dim} {start} {length}", o, want)
        for offset, d1, d2 in ((0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, 1, 2), (-2, 2, 0), (0, -1, -3), (6, 0, 1),
                               (-4, 0, 1)):
            want = torch.diagonal_copy(tx, offset, d1, d2)
            o = bld.call("aten::diagonal_copy.out", [x, bld.scalar("int", offset), bld.scalar("int", d1),
                                                       bld.scalar("int", d2)], want.shape, dtype)
            bld.expect(f"diagonal_copy {dtype} {offset} {d1} {d2}", o, want)
        for dim, size, step in ((0, 2, 1), (1, 2, 2), (2, 5, 1), (-1, 3, 2), (2, 1, 9), (1, 0, 1)):
            want = torch.ops.aten.unfold_copy(tx, dim, size, step)
            o = bld.call("aten::unfold_copy.out", [x, bld.scalar("int", dim), bld.scalar("int", size),
                                                     bld.scalar("int", step)], want.shape, dtype)
            bld.expect(f"unfold_copy {dtype} {dim} {size} {step}", o, want)
        for size, stride, offset in (([2, 2], [1, 2], None), ([3, 4], [1, 3], 1), ([5, 3, 2], [2, 1, 7], 0),
                                     ([2, 2], [0, 9], 41), ([], [], 59), ([4], [15], 14), ([0, 3], [100, 1], 0),
                                     ([1, 3], [1 << 40, 2], 3)):
            want = torch.as_strided_copy(tx, size, stride, offset)
            off = bld.scalar("none") if offset is None else bld.scalar("int", offset)
            o = bld.call("aten::as_strided_copy.out", [x, bld.scalar("int_list", size), bld.scalar("int_list", stride),
                                                         off], want.shape, dtype)
            bld.expect(f"as_strided_copy {dtype} {size} {stride} {offset}", o, want)
    z = bld.input(np.array(2.5, np.float32))
    want = torch.ops.aten.unfold_copy(torch.tensor(2.5), 0, 1, 1)
    o = bld.call("aten::unfold_copy.out", [z, bld.scalar("int", 0), bld.scalar("int", 1), bld.scalar("int", 1)],
                 want.shape, "float32")
    bld.expect("unfold_copy 0-dim", o, want)
    for rdtype in ("int64", "int32"):
        ra = np.array([2, 0, 3, 1], dtype=rdtype)
        r = bld.input(ra, rdtype)
        want = torch.repeat_interleave(_t(ra))
        for size in (None, 6):
            o = bld.call("aten::repeat_interleave.Tensor_out",
                         [r, bld.scalar("none") if size is None else bld.scalar("int", size)], want.shape, rdtype)
            bld.expect(f"repeat_interleave {rdtype} {size}", o, want)
    _check(bld)


def test_bad_offsets_and_sizes_fail_cleanly():
    """Arguments a program (or a model input, for repeats) gets wrong fail the call, never read outside self."""
    cases = [
        ("aten::as_strided_copy.out", lambda b, x: [x, b.scalar("int_list", [2, 2]), b.scalar("int_list", [1, 6]),
                                                    b.scalar("int", 6)], (2, 2)),      # last element 12 of 12
        ("aten::as_strided_copy.out", lambda b, x: [x, b.scalar("int_list", [2]), b.scalar("int_list", [-1]),
                                                    b.scalar("int", 5)], (2,)),         # negative stride
        ("aten::as_strided_copy.out", lambda b, x: [x, b.scalar("int_list", []), b.scalar("int_list", []),
                                                    b.scalar("int", 12)], ()),          # 0-dim past the end
        ("aten::as_strided_copy.out", lambda b, x: [x, b.scalar("int_list", [2]), b.scalar("int_list", [1 << 62]),
                                                    b.scalar("none")], (2,)),           # huge stride
        ("aten::narrow_copy.out", lambda b, x: [x, b.scalar("int", 1), b.scalar("int", 3), b.scalar("int", 2)], (3, 2)),
        ("aten::select_scatter.out", lambda b, x: [x, b.input(sample((4,), "float32")), b.scalar("int", 0),
                                                   b.scalar("int", 3)], (3, 4)),
        ("aten::unfold_copy.out", lambda b, x: [x, b.scalar("int", 1), b.scalar("int", 5), b.scalar("int", 1)], (3, 0, 5)),
        ("aten::diagonal_copy.out", lambda b, x: [x, b.scalar("int", 0), b.scalar("int", 1), b.scalar("int", -1)], (3,)),
        ("aten::roll.out", lambda b, x: [x, b.scalar("int_list", [1, 2]), b.scalar("int_list", [0])], (3, 4)),
        ("aten::repeat_interleave.Tensor_out", lambda b, x: [b.input(np.array([2, -1, 3], np.int64), "int64"),
                                                             b.scalar("none")], (4,)),  # negative repeat
        ("aten::repeat_interleave.Tensor_out", lambda b, x: [b.input(np.array([2, 1, 3], np.int64), "int64"),
                                                             b.scalar("none")], (5,)),  # sums to 6, out holds 5
    ]
    for op, args, shape in cases:
        bld = Builder()
        x = bld.input(sample((3, 4), "float32"))
        dtype = "int64" if "repeat_interleave" in op else "float32"
        o = bld.call(op, args(bld, x), shape, dtype)
        bld.p.outputs.append(o)
        _expect_failure(bld)


def test_export_keeps_roll_tril_select_scatter_whole():
    """export keeps roll, tril and select_scatter whole (one pass, no index/mask constant, no expanded
    copy of src); the rest of the family reaches its own kernel; each output equals PyTorch's."""
    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import ModelSpec
    from tests.op_check import Fn, check

    def fn(x, y, i):
        return (torch.roll(x, (1, -2), (0, 2)), torch.roll(x, 5), torch.tril(x, -1), torch.triu(x, 1),
                torch.select_scatter(x, y, 1, -1), torch.scatter_add(x, 2, i, x), torch.scatter(x, 2, i, 1.5),
                torch.diagonal(x, 1, 1, 2) * 2, x.unfold(2, 2, 2) + 1, torch.narrow_copy(x, 2, 1, 3))

    x = torch.randn(2, 3, 5)
    y = torch.randn(2, 5)
    i = torch.tensor([[[4, 0], [1, 2], [3, 3]], [[0, 0], [2, 1], [4, 4]]])
    ops = [ins.op for ins in export_model(ModelSpec(Fn(fn).eval(), (x, y, i))).instructions]
    for op in ("aten::roll.out", "aten::tril.out", "aten::select_scatter.out", "aten::scatter_add.out",
               "aten::scatter.value_out", "aten::diagonal_copy.out", "aten::unfold_copy.out",
               "aten::narrow_copy.out"):
        assert op in ops, (op, ops)
    assert "aten::index_select.out" not in ops and "aten::expand_copy.out" not in ops, ops
    check(fn, x, y, i)


@pytest.mark.qemu
def test_scatter_mix_model_verifies_in_fp32_on_qemu(tmp_path, qemu_tools):
    import mcu_gen

    r = mcu_gen.run("tests/models_user/scatter_mix.py", board="mps2-an505", out=tmp_path / "scatter_mix")
    assert r.verified, f"scatter_mix: max abs error {r.max_abs_error} > {r.tolerance}"
    assert r.max_abs_error <= r.tolerance


def test_scatter_family_in_place_over_self():
    """scatter, scatter_add, select_scatter, slice_scatter and tril write over a self that dies there
    (the planner's scatter_self / elementwise rules), and the results still equal PyTorch's; a src that is
    a view of self keeps out apart."""
    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import ModelSpec
    from tests.op_check import Fn

    def fn(x, y, i):
        a = torch.scatter_add(x * 2, 1, i, x)
        b = torch.scatter(a + 1, 1, i, 0.5)
        c = torch.select_scatter(b - 1, y, 0, 1)
        d = torch.slice_scatter(c * 3, x[:, :2], 1, 1, 5, 2)
        e = torch.tril(d + 2, -1)
        f = torch.slice_scatter(e.view(4, 5), e.view(4, 5), 0, 0, None, 1)  # src is self: not in place
        return f * 2

    x = torch.randn(4, 5)
    y = torch.randn(5)
    i = torch.tensor([[4, 0, 2], [1, 1, 3], [0, 0, 0], [2, 4, 3]])
    module = Fn(fn).eval()
    program = export_model(ModelSpec(module, (x, y, i)))
    inplace_pass.plan_memory(program)
    over = {program.instructions[step].op for step, _, _ in program.meta["inplace"]}
    assert {"aten::scatter_add.out", "aten::scatter.value_out", "aten::select_scatter.out",
            "aten::tril.out"} <= over, over
    last_slice = max(k for k, ins in enumerate(program.instructions) if ins.op == "aten::slice_scatter.out")
    assert last_slice not in {step for step, _, _ in program.meta["inplace"]}
    got = run_on_host(program, [x.numpy(), y.numpy(), i.numpy()])
    np.testing.assert_allclose(got[0], module(x, y, i).numpy(), rtol=1e-6, atol=1e-6)
