"""Advanced indexing kernels, aten::index.Tensor_out and aten::index_put.out (Tensor?[] indices), on the
host runner against PyTorch: int32/int64 index tensors, None entries, broadcasting, adjacent and
non-adjacent indexed dims, bool masks, accumulate, every data dtype; out-of-range indices from the
model's inputs fail the call cleanly. One program per test holds every case (one native build)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from tests.test_ops_reduce import Builder, sample

DTYPES = ["float32", "int8", "uint8", "int16", "int32", "int64", "bool"]
RNG = np.random.default_rng(11)


def _data(shape, dtype):
    if dtype == "uint8":
        return RNG.integers(0, 200, shape).astype(np.uint8)
    if dtype == "int8":
        return RNG.integers(-100, 100, shape).astype(np.int8)
    return sample(shape, dtype)


def _ix(*items):
    """Index entries: None, a list/array of ints (int64, or int32 when given as ('i32', values)), or a bool array."""
    out = []
    for it in items:
        if it is None:
            out.append(None)
        elif isinstance(it, tuple) and it[0] == "i32":
            out.append(np.array(it[1], dtype=np.int32))
        elif isinstance(it, np.ndarray) and it.dtype == np.bool_:
            out.append(it)
        else:
            out.append(np.array(it, dtype=np.int64))
    return out


M34 = RNG.integers(0, 2, (3, 4)).astype(np.bool_)
M45 = RNG.integers(0, 2, (4, 5)).astype(np.bool_)
M3 = np.array([True, False, True])
# (self shape, index entries); every index in range, negative ones included.
INDEX_CASES = [
    ((3, 4, 5), _ix([2, 0, -1, 1])),                       # x[i]
    ((3, 4, 5), _ix(None, [3, -4, 1])),                    # x[:, i]
    ((3, 4, 5), _ix(None, None, ("i32", [4, 0, -2]))),     # x[:, :, i] (int32)
    ((3, 4, 5), _ix([[0, 2], [1, -1]])),                   # 2-d index
    ((3, 4, 5), _ix([[0], [2]], [1, 3, -1])),              # x[i, j], broadcast [2,1] x [3]
    ((3, 4, 5), _ix([0, 2], None, [4, 1])),                # non-adjacent: B first
    ((2, 3, 4, 5), _ix(None, [2, 0], ("i32", [3, -1]))),   # adjacent, in the middle
    ((2, 3, 4, 5), _ix([1, 0, 1], None, None, [[0], [4]])),  # non-adjacent, broadcast [3] x [2,1]
    ((2, 3, 4, 5), _ix(None, [1], None, [0, 2, 4])),       # non-adjacent with a leading slice
    ((3, 4, 5), _ix(None, np.array(2))),                   # 0-d index: the dim goes
    ((3, 4, 5), _ix(np.array(-1), None, [1, 1, 0])),       # 0-d and 1-d, non-adjacent
    ((3, 4, 5), _ix(M34)),                                 # mask over two dims
    ((3, 4, 5), _ix(None, M45)),                           # x[:, mask]
    ((3, 4, 5), _ix(M3, None, [2])),                       # mask and int, non-adjacent ([count] x [1])
    ((3, 4, 5), _ix(M3, [1, 3])),                          # mask [2 trues] with an int index [2]
    ((6,), _ix([5, -6, 0, 0])),                            # 1-d self
]


def _torch_indices(items):
    return [None if i is None else torch.from_numpy(np.asarray(i)) for i in items]


def _list(bld, items):
    vals = []
    for it in items:
        if it is None:
            vals.append(-1)
        else:
            a = np.asarray(it)
            vals.append(bld.input(a, str(a.dtype)))
    return bld.scalar("optional_tensor_list", vals)


def test_index_tensor_all_dtypes():
    bld = Builder()
    for dtype in DTYPES:
        for shape, items in INDEX_CASES:
            xa = _data(shape, dtype)
            x = bld.input(xa, dtype)
            want = torch.ops.aten.index.Tensor(torch.from_numpy(xa), _torch_indices(items))
            o = bld.call("aten::index.Tensor_out", [x, _list(bld, items)], want.shape, dtype)
            bld.expect(f"{dtype} {shape} {[None if i is None else np.asarray(i).tolist() for i in items]}", o, want)
    bld.run_and_check(rtol=0, atol=0)


PUT_CASES = [
    # (self shape, index entries, values shape or None for R's shape, accumulate)
    ((3, 4, 5), _ix([2, 0]), None, False),
    ((3, 4, 5), _ix([2, 0, 2, 2]), None, True),                 # repeated indices accumulate
    ((3, 4, 5), _ix(None, [3, -4]), (5,), False),               # values broadcast
    ((3, 4, 5), _ix(None, [1, 1, -3]), (3, 1, 1), True),
    ((3, 4, 5), _ix([[0], [2]], [1, 3, -1]), (), False),        # a 0-d value everywhere
    ((3, 4, 5), _ix([0, 2], None, [4, 1]), (2, 1), False),      # non-adjacent: R is [2, 4]
    ((2, 3, 4, 5), _ix(None, [2, 0], ("i32", [3, -1])), None, True),
    ((3, 4, 5), _ix(M34), (), False),                           # x[mask] = v
    ((3, 4, 5), _ix(M34), (5,), True),
    ((3, 4, 5), _ix(None, M45), None, False),
    ((3, 4, 5), _ix(M3, None, [2]), None, True),
    ((6,), _ix([5, -6, 0, 0]), None, True),
]


def test_index_put_all_dtypes():
    bld = Builder()
    for dtype in DTYPES:
        for shape, items, vshape, acc in PUT_CASES:
            xa = _data(shape, dtype)
            tind = _torch_indices(items)
            r = torch.ops.aten.index.Tensor(torch.from_numpy(xa), tind).shape
            va = _data(r if vshape is None else vshape, dtype)
            x = bld.input(xa, dtype)
            v = bld.input(va, dtype)
            want = torch.ops.aten.index_put(torch.from_numpy(xa), tind, torch.from_numpy(va), acc)
            o = bld.call("aten::index_put.out", [x, _list(bld, items), v, bld.scalar("bool", acc)], want.shape, dtype)
            bld.expect(f"{dtype} {shape} {vshape} acc={acc}", o, want)
    bld.run_and_check(rtol=1e-6, atol=1e-6)


def _fails(bld):
    with pytest.raises(HostRunError, match="(?i)kernel|fail") as e:
        run_on_host(bld.p, bld.feeds)
    text = str(e.value).lower()
    assert "signal" not in text and "segmentation" not in text and "sanitizer" not in text, text


@pytest.mark.parametrize("op", ["index", "index_put"])
@pytest.mark.parametrize("items", [
    _ix([0, 4]), _ix([0, -5]), _ix(None, ("i32", [5])), _ix(None, [-6]), _ix([[1], [4]], [0, 1]),
    _ix([3, 1], None, [0, 2]),
])
def test_out_of_range_index_fails_cleanly(op, items):
    """Indices come from the model's inputs: out of range (negative ones wrap once, as in PyTorch) must
    fail the call, not read or write outside the tensors."""
    bld = Builder()
    x = bld.input(_data((4, 5, 2), "float32"))
    ok = [np.zeros(np.shape(i), dtype=np.asarray(i).dtype) if i is not None else None for i in items]
    shape = torch.ops.aten.index.Tensor(torch.zeros(4, 5, 2), _torch_indices(ok)).shape
    if op == "index":
        o = bld.call("aten::index.Tensor_out", [x, _list(bld, items)], shape, "float32")
    else:
        v = bld.input(_data(shape, "float32"))
        o = bld.call("aten::index_put.out", [x, _list(bld, items), v, bld.scalar("bool", False)], (4, 5, 2), "float32")
    bld.p.outputs.append(o)
    _fails(bld)


def test_bad_index_lists_fail_cleanly():
    """A mask whose true count is not the out's planned size, a mask of the wrong shape, too many
    indices, a float index: each a clean kernel failure."""
    cases = [
        ([np.array([True, True, False, False])], (3, 2)),    # 2 trues, out planned for 3
        ([np.array([True, False, True])], (2, 2)),           # mask over 4 rows has 3 entries
        ([np.array([0]), np.array([0]), np.array([0])], (1,)),  # 3 indices for 2 dims
        ([np.array([0.0], dtype=np.float32)], (1, 2)),       # float index
    ]
    for items, shape in cases:
        bld = Builder()
        x = bld.input(_data((4, 2), "float32"))
        o = bld.call("aten::index.Tensor_out", [x, _list(bld, items)], shape, "float32")
        bld.p.outputs.append(o)
        _fails(bld)


class _Indexing(torch.nn.Module):
    def forward(self, x, idx, m, v):
        return (x[:, idx], torch.ops.aten.index_put(x, [m], v),
                torch.ops.aten.index_put(x, [None, idx], v, True), x[idx.abs() % 3, None, idx])


def _indexing_inputs():
    g = torch.Generator().manual_seed(5)
    return (torch.randn(3, 8, generator=g), torch.tensor([1, 5, -1]), torch.randn(3, 8, generator=g) > 0,
            torch.tensor(0.5))


@pytest.mark.interop
def test_executorch_index_programs_both_ways():
    """Tensor?[] as ExecuTorch writes it (OptionalTensorList, -1 for None): an ExecuTorch-exported program
    with index.Tensor/index_put runs on mcu-gen's runtime, and mcu-gen's runs in ExecuTorch's."""
    pytest.importorskip("executorch", reason="executorch wheel not installed")
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from executorch.runtime import Runtime

    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import ModelSpec
    from mcu_gen.plan import inplace_pass
    from mcu_gen.program import pte

    inputs = _indexing_inputs()
    want = _Indexing()(*inputs)
    ep = torch.export.export(_Indexing().eval(), inputs)
    et = to_edge_transform_and_lower(ep, compile_config=EdgeCompileConfig(_skip_dim_order=True)).to_executorch()
    program = pte.read(et.buffer)
    assert {"aten::index.Tensor_out", "aten::index_put.out"} <= set(program.operators)
    assert any(getattr(v, "kind", "") == "optional_tensor_list" and -1 in v.value for v in program.values)
    got = run_on_host(program, [x.numpy() for x in inputs])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.numpy())

    ours = export_model(ModelSpec(_Indexing().eval(), inputs), fuse=False)
    inplace_pass.plan_memory(ours)
    data = pte.write(ours)
    et_program = Runtime.get().load_program(data)
    method = et_program.load_method("forward")
    for g, w in zip(method.execute(list(inputs)), want):
        assert torch.equal(g, w)
    del method, et_program


def test_loader_checks_optional_tensor_lists():
    """Signature 'Q' (Tensor?[]): an OptionalTensorList or a TensorList loads; an int list in its place is
    BadArgument at load, an item that is an int InvalidProgram."""
    def program(kind, items_of):
        bld = Builder()
        xa = _data((4, 3), "float32")
        x = bld.input(xa)
        i = bld.input(np.array([3, -4, 1]), "int64")
        o = bld.call("aten::index.Tensor_out", [x, bld.scalar(kind, items_of(bld, i))], (3, 3), "float32")
        bld.expect(kind, o, torch.from_numpy(xa)[[3, 0, 1]])
        return bld

    program("tensor_list", lambda b, i: [i]).run_and_check(rtol=0, atol=0)
    for kind, items_of, code in [("int_list", lambda b, i: [0], "BadArgument"),
                                 ("optional_tensor_list", lambda b, i: [b.scalar("int", 0)], "InvalidProgram")]:
        bld = program(kind, items_of)
        with pytest.raises(HostRunError, match=code):
            run_on_host(bld.p, bld.feeds)


def test_bool_mask_gather_is_refused_at_build_time():
    """x[mask] has as many rows as the mask has true elements: a shape that depends on the data, which a
    static memory plan cannot hold. The export names the op and says so (x[mask] = v is fine: index_put)."""
    from mcu_gen.capture.export import UnsupportedOperatorError, export_model
    from mcu_gen.capture.model_file import ModelSpec

    class MaskGather(torch.nn.Module):
        def forward(self, x, m):
            return x[m] * 2

    with pytest.raises(UnsupportedOperatorError, match=r"aten::index\.Tensor.*depends on the input data"):
        export_model(ModelSpec(MaskGather().eval(), (torch.randn(3, 4), torch.randn(3, 4) > 0)))


def _random_case(rng):
    """A random self shape and index list: None, int32/int64 tensors of broadcastable shapes, or one mask."""
    shape = tuple(int(s) for s in rng.integers(1, 5, rng.integers(1, 5)))
    bshape = tuple(int(s) for s in rng.integers(1, 4, rng.integers(0, 3)))
    items, d = [], 0
    n_entries = int(rng.integers(1, len(shape) + 1))
    while len(items) < n_entries and d < len(shape):
        r = rng.random()
        if r < 0.3:
            items.append(None)
            d += 1
        elif r < 0.4 and d + 1 < len(shape):
            items.append(rng.integers(0, 2, shape[d:d + 2]).astype(np.bool_))
            d += 2
        else:
            sub = tuple(s if rng.random() < 0.7 else 1 for s in bshape[int(rng.integers(0, len(bshape) + 1)):])
            ia = rng.integers(-shape[d], shape[d], sub)
            items.append(ia.astype(np.int32 if rng.random() < 0.3 else np.int64))
            d += 1
    return shape, items


def test_random_index_lists_match_torch():
    """Random index lists (None placement, broadcasting, masks, int32/int64), index and index_put."""
    rng = np.random.default_rng(3)
    bld = Builder()
    n = 0
    while n < 60:
        shape, items = _random_case(rng)
        xa = _data(shape, "float32")
        tind = _torch_indices(items)
        try:
            want = torch.ops.aten.index.Tensor(torch.from_numpy(xa), tind)
        except (IndexError, RuntimeError):
            continue  # index tensors that do not broadcast, or masks and ints of different lengths
        if want.numel() == 0 or want.dim() > 8:
            continue
        x = bld.input(xa)
        o = bld.call("aten::index.Tensor_out", [x, _list(bld, items)], want.shape, "float32")
        bld.expect(f"index {shape} {items}", o, want)
        va = _data(want.shape[int(rng.integers(0, want.dim() + 1)):], "float32")
        put = torch.ops.aten.index_put(torch.from_numpy(xa), tind, torch.from_numpy(va), True)
        o = bld.call("aten::index_put.out", [x, _list(bld, items), bld.input(va), bld.scalar("bool", True)],
                     put.shape, "float32")
        bld.expect(f"index_put {shape} {items} {va.shape}", o, put)
        n += 1
    bld.run_and_check(rtol=1e-5, atol=1e-5)
