"""The LU family of torch.linalg on the host runner against PyTorch (kernels_portable/linalg_lu_common.h):
lu_factor(_ex), det, slogdet / logdet, solve(_ex) and inv / inverse, float32, batched and not, n = 1 to 5,
with row interchanges, singular matrices (info, det 0) and broadcast right-hand sides. Each check() is one
native build, so each holds many cases."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction
from tests.op_check import check
from tests.test_ops_reduce import Builder

GEN = torch.Generator().manual_seed(5)


def randn(*shape):
    return torch.randn(*shape, generator=GEN)


def well_conditioned(*shape):
    """Random matrices with condition number 2 (an orthogonal Q, columns scaled 1..2) that still need row
    interchanges: solves and inverses in fp32 stay close to MKL's."""
    n = shape[-1]
    return torch.linalg.qr(randn(*shape)).Q * torch.linspace(1.0, 2.0, n)


# Leading zero and small leading elements (the factorization must interchange rows), a permutation
# (det -1), and singular matrices whose factors are exact (a zero pivot both in A's LU and in A^T's).
ZERO_LEAD = torch.tensor([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
SMALL_LEAD = torch.tensor([[1e-3, 1.0], [1.0, 1.0]])
SWAP = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
SINGULAR = torch.stack([
    torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]]),  # rows 1 and 2 parallel: info 3
    torch.tensor([[1.0, 0.0, 2.0], [3.0, 0.0, 4.0], [5.0, 0.0, 6.0]]),  # a zero column: info 2
    torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [4.0, 5.0, 6.0]]),  # a zero row
])
SINGULAR_2 = torch.tensor([[1.0, 2.0], [2.0, 4.0]])


def factorizations(a3, a5, a1, r35, r53):
    """lu_factor's LU and pivots, lu_factor_ex's info (singular matrices too), det, slogdet, logdet."""
    outs = []
    for a in (a3, a5, a1, r35, r53, ZERO_LEAD, SMALL_LEAD, SWAP):
        lu, piv = torch.linalg.lu_factor(a)
        outs += [lu, piv]
    outs += list(torch.linalg.lu_factor_ex(SINGULAR))  # LU, pivots, info (3, 2, 3)
    outs += list(torch.linalg.lu_factor_ex(SINGULAR_2))
    for a in (a3, a5, a1, ZERO_LEAD, SMALL_LEAD, SWAP, SINGULAR, SINGULAR_2):
        outs.append(torch.linalg.det(a))
        outs += list(torch.linalg.slogdet(a))
    outs.append(torch.det(a5))
    outs.append(torch.logdet(a3))  # NaN where det < 0
    outs.append(torch.logdet(a5 @ a5.mT + torch.eye(5)))  # positive definite
    return tuple(outs)


def test_lu_factor_det_slogdet():
    a3 = randn(2, 3, 3, 3)  # batch (2, 3)
    a5 = randn(5, 5)
    a1 = randn(4, 1, 1)
    r35 = randn(2, 3, 5)  # lu_factor takes (..., m, n)
    r53 = randn(5, 3)
    assert (torch.linalg.det(a3) < 0).any() and (torch.linalg.det(a3) > 0).any()
    check(factorizations, a3, a5, a1, r35, r53, rtol=1e-4, atol=1e-5)


def solves(a3, a4, a5, a1, b3, bm, b5, c3):
    """solve with a vector B ((n,) and A.shape[:-1]), a matrix B, B broadcast against A's batch, left=False,
    n = 1; solve_ex's and inv_ex's info of singular matrices; inv and torch.inverse."""
    outs = [
        torch.linalg.solve(a5, b5[:, 0]),  # vector (n,)
        torch.linalg.solve(a3, b3),  # vector of A.shape[:-1]: (2, 3)
        torch.linalg.solve(a3, b3[0]),  # vector (n,), broadcast over A's batch
        torch.linalg.solve(a3, b3.unsqueeze(-1)),  # matrix (2, 3, 1)
        torch.linalg.solve(a5, b5),  # matrix (5, 2)
        torch.linalg.solve(a4, bm),  # A (2, 1, 4, 4), B (3, 4, 2): X (2, 3, 4, 2)
        torch.linalg.solve(a3, c3, left=False),  # X A = B: B (4, 3), X (2, 4, 3)
        torch.linalg.solve(a1, b3[:, :1]),  # n = 1
        torch.linalg.solve(ZERO_LEAD, b3[1]),
        torch.linalg.solve_ex(SINGULAR, b3[0])[1],  # info only (X is inf / NaN)
        torch.linalg.inv(a3),
        torch.linalg.inv(a5),
        torch.linalg.inv(a1),
        torch.inverse(ZERO_LEAD),
        torch.inverse(SWAP),
        torch.linalg.inv_ex(SINGULAR)[1],
        torch.linalg.inv_ex(SINGULAR_2)[1],
    ]
    return tuple(outs)


def test_solve_inv():
    a3 = well_conditioned(2, 3, 3)
    a4 = well_conditioned(2, 1, 4, 4)
    a5 = well_conditioned(5, 5)
    a1 = randn(2, 1, 1) + 2
    for a in (a3, a4, a5):
        assert (torch.linalg.lu_factor(a).pivots != torch.arange(1, a.shape[-1] + 1, dtype=torch.int32)).any()
    check(solves, a3, a4, a5, a1, randn(2, 3), randn(3, 4, 2), randn(5, 2), randn(4, 3), rtol=1e-4, atol=1e-5)


def _instruction(op, inputs, scalars, outs):
    """One instruction: input tensors, then scalar arguments ((kind, value)), then the outs (shape, dtype)."""
    bld = Builder()
    args = [bld.input(x) for x in inputs] + [bld.scalar(kind, value) for kind, value in scalars]
    out_ids = [bld.p.add_tensor(shape, dtype) for shape, dtype in outs]
    bld.p.instructions.append(Instruction(op, args + out_ids + [bld.scalar("tensor_list", out_ids)]))
    bld.p.outputs.append(out_ids[0])
    return bld


F, I32, I64 = "float32", "int32", "int64"
M = np.eye(3, dtype=np.float32)[None].repeat(2, 0)  # (2, 3, 3)
R = np.ones((2, 3, 4), dtype=np.float32)  # not square
FLAGS = [("bool", True), ("bool", False)]


@pytest.mark.parametrize("op,inputs,scalars,outs", [
    ("aten::linalg_lu_factor_ex.out", [M], FLAGS, [((2, 3, 3), F), ((2, 4), I32), ((2,), I32)]),  # pivots' shape
    ("aten::linalg_lu_factor_ex.out", [M], FLAGS, [((2, 3, 3), F), ((2, 3), I64), ((2,), I32)]),  # pivots' dtype
    ("aten::linalg_lu_factor_ex.out", [M], FLAGS, [((2, 3, 3), F), ((2, 3), I32), ((1,), I32)]),  # info's shape
    ("aten::linalg_lu_factor_ex.out", [M], [("bool", False), ("bool", False)],
     [((2, 3, 3), F), ((2, 3), I32), ((2,), I32)]),  # pivot=False
    ("aten::_linalg_det.result", [R], [], [((2,), F), ((2, 3, 4), F), ((2, 3), I32)]),  # A not square
    ("aten::_linalg_det.result", [M], [], [((3,), F), ((2, 3, 3), F), ((2, 3), I32)]),  # result's shape
    ("aten::_linalg_slogdet.sign", [M], [], [((2,), F), ((2,), F), ((2, 3, 3), F), ((3, 3), I32)]),  # pivots
    ("aten::linalg_inv_ex.inverse", [R], [("bool", False)], [((2, 3, 4), F), ((2,), I32)]),  # A not square
    ("aten::linalg_inv_ex.inverse", [M], [("bool", False)], [((2, 3, 2), F), ((2,), I32)]),  # inverse's shape
    ("aten::_linalg_solve_ex.result", [M, np.ones(4, np.float32)], FLAGS,
     [((2, 3), F), ((2, 3, 3), F), ((2, 3), I32), ((2,), I32)]),  # B's n
    ("aten::_linalg_solve_ex.result", [M, np.ones((2, 3, 2), np.float32)], FLAGS,
     [((2, 3, 3), F), ((2, 3, 3), F), ((2, 3), I32), ((2,), I32)]),  # result's shape
    ("aten::_linalg_solve_ex.result", [M, np.ones((3, 3, 2), np.float32)], FLAGS,
     [((3, 3, 2), F), ((2, 3, 3), F), ((2, 3), I32), ((2,), I32)]),  # batches that do not broadcast
    ("aten::_linalg_solve_ex.result", [M, np.ones(3, np.float32)], [("bool", False), ("bool", False)],
     [((2, 3), F), ((2, 3, 3), F), ((2, 3), I32), ((2,), I32)]),  # a vector B with left=False
])
def test_bad_arguments_fail_cleanly(op, inputs, scalars, outs):
    bld = _instruction(op, inputs, scalars, outs)
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(bld.p, bld.feeds)


def test_good_arguments_run():
    """The bad-argument programs' well-formed twin runs (so the failures above are the kernels' checks)."""
    bld = _instruction("aten::_linalg_solve_ex.result", [M, np.ones((2, 3, 2), np.float32)], FLAGS,
                       [((2, 3, 2), F), ((2, 3, 3), F), ((2, 3), I32), ((2,), I32)])
    (x,) = run_on_host(bld.p, bld.feeds)
    np.testing.assert_array_equal(x, np.ones((2, 3, 2), np.float32))
