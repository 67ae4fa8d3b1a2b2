"""mcu-gen's own decompositions, for core-ATen operators that have no kernel here (nor in ExecuTorch's portable
library) but that a graph of operators with kernels computes exactly:

- ``adaptive_max_pool2d`` (F.adaptive_max_pool1d/2d): a max is separable, so the rows' windows first (one amax
  per output row, cat), then the columns' (one amax per output column, cat); PyTorch's windows,
  [floor(i * in / out), ceil((i + 1) * in / out)). The indices, per window, only when something reads them. A pool
  whose windows tile the input (in a multiple of out) is one max_pool2d instead.
- ``sort.stable`` with stable=False (torch.sort(x, stable=False, ...)): sort.default, std::sort's order.
- ``avg_pool3d`` with a window of 1 x 1 in its last two dims (nn.LocalResponseNorm's channel window): an
  avg_pool2d over the depth and the flattened (H, W).
- ``__lshift__`` / ``__rshift__`` (Python's ``x << n``, ``x >> y`` on tensors): the bitwise shifts they are;
  ``bitwise_left_shift.Scalar_Tensor`` / ``bitwise_right_shift.Scalar_Tensor`` (``3 << x``): the Tensor shift
  of the number as a 0-d tensor of the result's dtype; so is ``remainder.Scalar_Tensor`` (``7 % x``).
- the older linear algebra calls, to the torch.linalg operators with kernels: ``cholesky`` (linalg_cholesky_ex's L),
  ``triangular_solve`` (linalg_solve_triangular of A or A^T, and A's copy), ``cholesky_solve`` (two triangular
  solves with the factor and its transpose) and ``cholesky_inverse`` (cholesky_solve of the identity).
- ``_trilinear`` as F.bilinear calls it (nn.Bilinear: x1 W x2 + b): one mm of x1 by W laid out as (I, O * J), then the
  product with x2 summed over J, with no B x O x I x J tensor between.
- ``rrelu_with_noise_functional`` in eval (nn.RReLU, F.rrelu(training=False)): leaky_relu with the mean slope
  (lower + upper) / 2, as ATen computes it; its noise is left as it was.

Each returns NotImplemented for any other case, which keeps the operator (and its "no kernel" error)."""
from __future__ import annotations

import torch

aten = torch.ops.aten


def _windows(size: int, out: int) -> list:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _cell_indices(x, rows, cols, w: int):
    """PyTorch's indices of adaptive_max_pool2d (flat in H x W, the first maximum of a window in row-major order):
    per window of rh x rw from (a, c), max.dim over its flattened elements gives t, at a * W + c + t + (t // rw)(W - rw)."""
    out_rows = []
    for a, b in rows:
        cells = []
        for c, d in cols:
            region = aten.slice.Tensor(aten.slice.Tensor(x, -2, a, b), -1, c, d)
            flat = aten.view.default(aten.clone.default(region, memory_format=torch.contiguous_format),
                                     list(x.shape[:-2]) + [1, (b - a) * (d - c)])
            t = aten.max.dim(flat, -1, True)[1]
            row = aten.div.Scalar_mode(t, d - c, rounding_mode="floor")
            at = aten.add.Tensor(t, aten.mul.Scalar(row, w - (d - c)))
            cells.append(aten.add.Scalar(at, a * w + c))
        out_rows.append(aten.cat.default(cells, -1))
    return aten.cat.default(out_rows, -2)


def adaptive_max_pool2d(x, output_size):
    h, w = int(x.shape[-2]), int(x.shape[-1])
    oh, ow = (int(s) for s in output_size)
    if h % oh == 0 and w % ow == 0:
        k = [h // oh, w // ow]
        return aten.max_pool2d_with_indices.default(x, k, k)
    rows, cols = _windows(h, oh), _windows(w, ow)
    y = aten.cat.default([aten.amax.default(aten.slice.Tensor(x, -2, a, b), [-2], True) for a, b in rows], -2)
    values = aten.cat.default([aten.amax.default(aten.slice.Tensor(y, -1, c, d), [-1], True) for c, d in cols], -1)
    return values, _cell_indices(x, rows, cols, w)  # (removed as dead code when nothing reads the indices)


def avg_pool3d(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    k = list(kernel_size) * (3 if len(kernel_size) == 1 else 1)
    s = list(stride) if stride else k
    s = s * (3 if len(s) == 1 else 1)
    p = list(padding) if isinstance(padding, (list, tuple)) else [padding]
    p = p * (3 if len(p) == 1 else 1)
    if k[1:] != [1, 1] or s[1:] != [1, 1] or p[1:] != [0, 0] or x.dim() not in (4, 5):
        return NotImplemented
    h, w = int(x.shape[-2]), int(x.shape[-1])
    flat = aten.view.default(x, list(x.shape[:-2]) + [h * w])
    y = aten.avg_pool2d.default(flat, [k[0], 1], [s[0], 1], [p[0], 0], ceil_mode, count_include_pad, divisor_override)
    return aten.view.default(y, list(x.shape[:-3]) + [int(y.shape[-2]), h, w])


def sort_stable(x, *, stable=None, dim=-1, descending=False):
    if stable:
        return NotImplemented  # the stable kernel (op_sort_stable.cpp)
    return aten.sort.default(x, dim, descending)


def rrelu_eval(x, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    if training:
        return NotImplemented  # random slopes: a training-time operator
    return aten.leaky_relu.default(x, (lower + upper) / 2), aten.clone.default(noise)


def _tensor_op_of_scalar(op):
    def decompose(number, x):
        dtype = torch.result_type(number, x)
        return op(aten.scalar_tensor.default(number, dtype=dtype), x)
    return decompose


def _mt(x):
    return aten.transpose.int(x, -2, -1)


def cholesky(x, upper=False):
    return aten.linalg_cholesky_ex.default(x, upper=upper)[0]


def triangular_solve(b, a, upper=True, transpose=False, unitriangular=False):
    if transpose:  # A^T X = B: A^T is triangular the other way
        x = aten.linalg_solve_triangular.default(_mt(a), b, upper=not upper, unitriangular=unitriangular)
    else:
        x = aten.linalg_solve_triangular.default(a, b, upper=upper, unitriangular=unitriangular)
    return x, aten.clone.default(a)


def cholesky_solve(b, factor, upper=False):
    lower = _mt(factor) if upper else factor  # A = L L^T with L lower
    y = aten.linalg_solve_triangular.default(lower, b, upper=False)
    return aten.linalg_solve_triangular.default(_mt(lower), y, upper=True)


def cholesky_inverse(factor, upper=False):
    n = int(factor.shape[-1])
    eye = aten.eye.default(n, dtype=factor.dtype)
    return cholesky_solve(eye, factor, upper)


def trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """aten._trilinear in F.bilinear's pattern: i1 (B, I), i2 the weight (O, I, J), i3 (B, J); sum over I and J."""
    if (list(expand1), list(expand2), list(expand3), list(sumdim)) != ([1, 3], [0], [1, 2], [2, 3]) or \
            i1.dim() != 2 or i2.dim() != 3 or i3.dim() != 2:
        return NotImplemented
    b, i = i1.shape
    o, _, j = i2.shape
    w = aten.clone.default(aten.permute.default(i2, [1, 0, 2]), memory_format=torch.contiguous_format)
    t = aten.view.default(aten.mm.default(i1, aten.view.default(w, [i, o * j])), [b, o, j])
    return aten.sum.dim_IntList(aten.mul.Tensor(t, aten.unsqueeze.default(i3, 1)), [2])


def table() -> dict:
    """The decompositions, keyed by the OpOverload they replace."""
    return {aten.adaptive_max_pool2d.default: adaptive_max_pool2d, aten.avg_pool3d.default: avg_pool3d,
            aten.sort.stable: sort_stable, aten.rrelu_with_noise_functional.default: rrelu_eval,
            aten.__lshift__.Scalar: aten.bitwise_left_shift.Tensor_Scalar,
            aten.__lshift__.Tensor: aten.bitwise_left_shift.Tensor,
            aten.__rshift__.Scalar: aten.bitwise_right_shift.Tensor_Scalar,
            aten.__rshift__.Tensor: aten.bitwise_right_shift.Tensor,
            aten.bitwise_left_shift.Scalar_Tensor: _tensor_op_of_scalar(aten.bitwise_left_shift.Tensor),
            aten.bitwise_right_shift.Scalar_Tensor: _tensor_op_of_scalar(aten.bitwise_right_shift.Tensor),
            aten.remainder.Scalar_Tensor: _tensor_op_of_scalar(aten.remainder.Tensor),
            aten.cholesky.default: cholesky, aten.triangular_solve.default: triangular_solve,
            aten.cholesky_solve.default: cholesky_solve, aten.cholesky_inverse.default: cholesky_inverse,
            aten._trilinear.default: trilinear}
