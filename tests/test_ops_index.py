"""Portable indexing kernels (index_select, gather) on the host runner against PyTorch,
and out-of-range indices from the model's inputs: a clean kernel failure, no crash."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from tests.test_ops_reduce import Builder, sample


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "bool"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_index_select_and_gather(dtype, index_dtype):
    bld = Builder()
    xa = sample((3, 4, 5), dtype)
    x = bld.input(xa, dtype)
    tx = torch.from_numpy(xa)
    for dim in (0, 1, 2, -1):
        n = xa.shape[dim]
        ia = np.array([n - 1, 0, -1, 1, 0][: 3 + dim % 2], dtype=index_dtype)
        i = bld.input(ia, index_dtype)
        want = torch.index_select(tx, dim, torch.from_numpy(ia.astype(np.int64)) % n)
        o = bld.call("aten::index_select.out", [x, bld.scalar("int", dim), i], want.shape, dtype)
        bld.expect(f"index_select {dim}", o, want)
        gshape = list(xa.shape)
        gshape[dim] = 2 + dim % 3
        gshape[(dim + 1) % 3] -= 1  # index smaller than self off dim
        ga = RNG_INDEX.integers(0, n, gshape).astype(index_dtype)
        g = bld.input(ga, index_dtype)
        want = torch.gather(tx, dim, torch.from_numpy(ga.astype(np.int64)))
        o = bld.call("aten::gather.out", [x, bld.scalar("int", dim), g, bld.scalar("bool", False)], want.shape, dtype)
        bld.expect(f"gather {dim}", o, want)
    bld.run_and_check(rtol=0, atol=0)


RNG_INDEX = np.random.default_rng(7)


@pytest.mark.parametrize("op,bad", [
    ("aten::index_select.out", 4),
    ("aten::index_select.out", -5),
    ("aten::gather.out", 4),
    ("aten::gather.out", -9),
])
def test_out_of_range_index_fails_cleanly(op, bad):
    """The index comes from a model input: out of range must fail the call, not read outside the tensor."""
    bld = Builder()
    x = bld.input(sample((3, 4), "float32"))
    if op == "aten::index_select.out":
        i = bld.input(np.array([0, bad], dtype=np.int64), "int64")
        o = bld.call(op, [x, bld.scalar("int", 1), i], (3, 2), "float32")
    else:
        i = bld.input(np.array([[0, bad]], dtype=np.int64), "int64")
        o = bld.call(op, [x, bld.scalar("int", 1), i, bld.scalar("bool", False)], (1, 2), "float32")
    bld.p.outputs.append(o)
    with pytest.raises(HostRunError, match="(?i)kernel|fail") as e:
        run_on_host(bld.p, bld.feeds)
    assert "signal" not in str(e.value).lower() and "segmentation" not in str(e.value).lower()
