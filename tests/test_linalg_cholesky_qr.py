"""fp32 linear algebra kernels on the host runner against PyTorch CPU: linalg_cholesky_ex (lower and upper,
info of matrices that are not positive-definite), linalg_solve_triangular (left and right, upper and lower,
unitriangular, broadcast batches; torch.cholesky, cholesky_solve, cholesky_inverse and triangular_solve through
them) and linalg_qr (reduced, complete, r of tall, square and wide matrices, with PyTorch's signs). One check()
per operator family: each compiles a runner."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction
from tests.op_check import check
from tests.test_ops_reduce import Builder

GEN = torch.Generator().manual_seed(7)


def randn(*shape):
    return torch.randn(*shape, generator=GEN)


def spd(*shape):
    """Symmetric positive-definite matrices (..., n, n), well conditioned."""
    x = randn(*shape)
    return x @ x.mT + shape[-1] * torch.eye(shape[-1])


def triangular_ish(*shape):
    """Well-conditioned matrices for either triangle: diagonal 2..3 in magnitude with random signs, small
    elements elsewhere (both triangles set: the kernel must read only one)."""
    n = shape[-1]
    d = (2 + torch.rand(*shape[:-1], generator=GEN)) * torch.sign(randn(*shape[:-1]))
    return 0.3 * randn(*shape) * (1 - torch.eye(n)) + torch.diag_embed(d)


def not_positive_definite():
    """A (2, 6, 6) batch: the first fails at order 4 (info 4), the second at order 1 (info 1)."""
    a = spd(2, 6, 6)
    a[0, 3, 3] = -1.0
    a[1, 0, 0] = -2.0
    return a


def cholesky_cases(s1, s2, s4, s6, garbage_above, garbage_below, bad, nan, x):
    out = []
    for s in (s1, s2, s4, s6):
        out += [torch.linalg.cholesky(s), torch.linalg.cholesky(s, upper=True)]
    out += list(torch.linalg.cholesky_ex(s4))  # factor and info (int32 zeros)
    # Only one triangle is read: garbage in the other one changes nothing.
    out.append(torch.linalg.cholesky(garbage_above))
    out.append(torch.linalg.cholesky(garbage_below, upper=True))
    # Not positive-definite (a garbage triangle read, a negative pivot, NaN on the diagonal): info and the
    # partial factor PyTorch leaves, no error on a device.
    out += list(torch.linalg.cholesky_ex(garbage_above, upper=True))
    out += list(torch.linalg.cholesky_ex(bad))
    out += list(torch.linalg.cholesky_ex(bad, upper=True))
    out += list(torch.linalg.cholesky_ex(bad[0, :3, :3]))  # its leading 3 x 3 block is positive-definite
    out += list(torch.linalg.cholesky_ex(nan))
    # A matrix built in the graph (a Gaussian-process kernel matrix) and torch.linalg.cholesky of it.
    k = torch.exp(-0.5 * (x.unsqueeze(-1) - x.unsqueeze(-2)) ** 2) + 0.1 * torch.eye(x.shape[-1])
    out.append(torch.linalg.cholesky(k))
    return tuple(out)


def test_cholesky():
    garbage_above = spd(3, 4, 4) + torch.triu(torch.full((4, 4), 50.0), 1)
    nan = spd(4, 4)
    nan[2, 2] = float("nan")
    check(cholesky_cases, spd(1, 1), spd(2, 2), spd(3, 4, 4), spd(6, 6), garbage_above,
          garbage_above.mT.contiguous(), not_positive_definite(), nan, randn(2, 5), rtol=1e-4, atol=1e-4)


def solve_cases(a2, a4, a4g, a6, a6g, ab, b2, b4, b4v, b6r, bb, bbig, s4):
    st = torch.linalg.solve_triangular
    out = []
    for upper in (False, True):
        out.append(st(a2, b2, upper=upper))
        out.append(st(a4, b4, upper=upper))
        out.append(st(a4, b4v, upper=upper))  # a vector-like B (n, 1)
        out.append(st(a6, b6r, upper=upper, left=False))  # X A = B
        out.append(st(a4, b4v.mT, upper=upper, left=False))
        # unitriangular: the diagonal is taken as 1 and not read (a4g, a6g: 0, NaN, 1e6 there)
        out.append(st(a4g, b4, upper=upper, unitriangular=True))
        out.append(st(a6g, b6r, upper=upper, left=False, unitriangular=True))
        # batches: A batched with B not, B batched with A not, both broadcast
        out.append(st(ab, b4, upper=upper))
        out.append(st(a4, bb, upper=upper))
        out.append(st(ab.unsqueeze(1), bbig, upper=upper))
        out.append(st(ab, bb.mT, upper=upper, left=False))
    # A Kalman-style solve: S = L L^T, then L^-1 B and (L^T)^-1 of that.
    l = torch.linalg.cholesky(s4)
    y = st(l, b4, upper=False)
    out.append(st(l.mT, y, upper=True))
    # The older calls (mcu_gen/capture/decompositions.py rewrites them to these kernels).
    u = torch.cholesky(s4, upper=True)
    out += [torch.cholesky(s4), u, torch.cholesky_solve(b4, l), torch.cholesky_solve(b4, u, upper=True),
            torch.cholesky_inverse(l), torch.cholesky_inverse(u, upper=True)]
    for upper in (False, True):
        for transpose in (False, True):
            out += torch.triangular_solve(b4, a4, upper=upper, transpose=transpose)
    out.append(torch.triangular_solve(b4, a4g, unitriangular=True)[0])
    return tuple(out)


def with_garbage_diagonal(a):
    a = a.clone()
    n = a.shape[-1]
    a[..., range(n), range(n)] = torch.tensor([0.0, float("nan"), 1e6, -3.0, 0.0, 7.0][:n])
    return a


def test_solve_triangular():
    a4, a6 = triangular_ish(4, 4), triangular_ish(6, 6)
    check(solve_cases, triangular_ish(2, 2), a4, with_garbage_diagonal(a4), a6, with_garbage_diagonal(a6),
          triangular_ish(3, 4, 4), randn(2, 3), randn(4, 2), randn(4, 1), randn(5, 6), randn(3, 4, 2),
          randn(2, 4, 2), spd(4, 4), rtol=1e-4, atol=1e-4)


def qr_cases(tall, square, wide, batch, one, col, row, zero_alpha, tri):
    out = []
    for a in (tall, square, wide, batch, one, col, row, zero_alpha, tri):
        for mode in ("reduced", "complete", "r"):
            q, r = torch.linalg.qr(a, mode=mode)
            out += [q, r]
    out += list(torch.qr(tall))  # the deprecated spelling exports to linalg_qr too
    return tuple(out)


def test_qr():
    zero_alpha = randn(5, 3)
    zero_alpha[0] = 0.0  # alpha = 0 at the first steps: beta = -|x| (sign(+0) = +)
    tri = torch.triu(randn(4, 4)) - 2 * torch.eye(4)  # nothing to annihilate: tau = 0, R = A, Q = I
    check(qr_cases, randn(6, 4), randn(4, 4), randn(3, 5), randn(2, 5, 3), randn(1, 1), randn(6, 1), randn(1, 6),
          zero_alpha, tri, rtol=1e-4, atol=1e-4)


def _call(bld, op, args, outs):
    """An instruction with several outputs (a tuple return); the program returns the first."""
    ids = [bld.p.add_tensor(shape, dtype) for shape, dtype in outs]
    bld.p.instructions.append(Instruction(op, list(args) + ids + [bld.scalar("tensor_list", ids)]))
    bld.p.outputs.append(ids[0])


@pytest.mark.parametrize("case", [
    "cholesky_not_square", "cholesky_info_shape", "qr_mode", "qr_r_with_q", "qr_r_shape", "solve_rows",
    "solve_batch",
])
def test_bad_arguments_fail_cleanly(case):
    """A program whose shapes, dtypes or mode do not fit the operator is refused (KernelFailed), never run."""
    bld = Builder()
    rng = np.random.default_rng(3)
    x = bld.input(rng.standard_normal((3, 4, 5)).astype(np.float32))
    sq = bld.input(rng.standard_normal((3, 4, 4)).astype(np.float32))
    f, t = bld.scalar("bool", False), bld.scalar("bool", True)
    if case == "cholesky_not_square":
        _call(bld, "aten::linalg_cholesky_ex.L", [x, f, f], [((3, 4, 5), "float32"), ((3,), "int32")])
    elif case == "cholesky_info_shape":
        _call(bld, "aten::linalg_cholesky_ex.L", [sq, f, f], [((3, 4, 4), "float32"), ((4,), "int32")])
    elif case == "qr_mode":
        _call(bld, "aten::linalg_qr.out", [x, bld.scalar("string", "full")],
              [((3, 4, 4), "float32"), ((3, 4, 5), "float32")])
    elif case == "qr_r_with_q":
        _call(bld, "aten::linalg_qr.out", [x, bld.scalar("string", "r")],
              [((3, 4, 4), "float32"), ((3, 4, 5), "float32")])
    elif case == "qr_r_shape":
        _call(bld, "aten::linalg_qr.out", [x, bld.scalar("string", "reduced")],
              [((3, 4, 4), "float32"), ((3, 5, 5), "float32")])
    elif case == "solve_rows":  # B has 5 rows, A is 4 x 4
        _call(bld, "aten::linalg_solve_triangular.out", [sq, bld.input(rng.standard_normal((5, 2))), t, t, f],
              [((3, 5, 2), "float32")])
    elif case == "solve_batch":  # batches 3 and 2 do not broadcast
        _call(bld, "aten::linalg_solve_triangular.out", [sq, bld.input(rng.standard_normal((2, 4, 2))), t, t, f],
              [((3, 4, 2), "float32")])
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(bld.p, bld.feeds)
