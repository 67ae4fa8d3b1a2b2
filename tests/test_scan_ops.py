"""Scan kernels (cumprod, cummax, cummin, logcumsumexp: kernels_portable/op_cum*.cpp, op_logcumsumexp.cpp),
exported from PyTorch functions and run on the host build against PyTorch eager: fp32 within 1e-5,
ints, bools and indices exact, NaN where PyTorch has it. Covers ties (cummax/cummin take the later
index), NaN (stays, with the latest NaN's index), +-inf, a 0-dim input, dim 0 of a 3-D tensor and
negative dims."""
from __future__ import annotations

import numpy as np
import torch

from tests.op_check import check

NAN, INF = float("nan"), float("inf")


def test_float_scans_with_ties_nan_and_inf():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 5, generator=g)
    x[1, 2, 1] = x[1, 2, 3] = x[1, 2, 4] = 0.5  # ties along the last dim
    x[2, 1, 0] = x[0, 1, 0]  # a tie along dim 0
    s = torch.tensor([[1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0, -INF, INF],
                      [-INF, -INF, 1.0, INF, INF, -INF, 2.0, NAN, 3.0],
                      [2.0, 1.0, 1.0, 2.0, 0.0, -0.0, 0.0, -INF, -INF],
                      [-INF, -INF, -INF, -INF, INF, 4.0, -INF, INF, 1.0],
                      [0.5, -2.0, 0.5, -2.0, 7.0, 7.0, -1.0, -1.0, 0.25]])
    z = torch.tensor(2.5)
    check(lambda a, b, c: (*torch.cummax(a, dim=0), *torch.cummin(a, dim=-1), *torch.cummax(a, 1),
                           *torch.cummax(b, dim=1), *torch.cummin(b, dim=-1), *torch.cummax(b, dim=0),
                           *torch.cummin(b, dim=0),
                           torch.logcumsumexp(a, 0), torch.logcumsumexp(a, -1), torch.logcumsumexp(a, 1),
                           torch.logcumsumexp(b, 1), torch.logcumsumexp(b, -2),
                           torch.cumprod(a, 0), torch.cumprod(a, -1), torch.cumprod(b, 1), torch.cumprod(b, 0),
                           *torch.cummax(c, 0), *torch.cummin(c, -1), torch.logcumsumexp(c, 0), torch.cumprod(c, -1)),
          x, s, z, rtol=1e-5, atol=1e-5)


def test_integer_and_bool_scans_and_cumprod_dtype_and_wrapping():
    g = torch.Generator().manual_seed(1)
    i8 = torch.randint(-100, 100, (3, 2, 6), dtype=torch.int8, generator=g)
    i8[0, 1, :] = torch.tensor([100, 100, 100, 100, 100, -128], dtype=torch.int8)  # int8 products wrap
    i32 = torch.tensor([[3, -7, 2, 9, 9, -7], [-1, 9, 9, -7, -7, 3], [70000, 70000, 70000, -3, 5, 0]],
                       dtype=torch.int32)
    i64 = torch.tensor([[2**40, 2**30, -5, 3, 2**20, 7], [4, 4, -4, -4, 4, 4]], dtype=torch.int64)  # int64 wraps
    b = torch.tensor([[True, False, True, True], [False, False, True, False], [True, True, True, True]])
    check(lambda p, q, r, m: (*torch.cummax(p, dim=0), *torch.cummin(p, dim=-1), *torch.cummax(q, 1),
                              *torch.cummin(q, -2), *torch.cummax(r, -1), *torch.cummin(r, 0),
                              *torch.cummax(m, 1), *torch.cummin(m, dim=-1), *torch.cummax(m, 0),
                              torch.cumprod(p, 0), torch.cumprod(p, -1), torch.cumprod(p, -1, dtype=torch.int8),
                              torch.cumprod(p, 1, dtype=torch.float32), torch.cumprod(q, 1),
                              torch.cumprod(q, 1, dtype=torch.int32), torch.cumprod(q, 0, dtype=torch.int16),
                              torch.cumprod(r, -1), torch.cumprod(r, 0, dtype=torch.int32),
                              torch.cumprod(m, 1), torch.cumprod(m, 0, dtype=torch.uint8),
                              torch.cumprod(m, -1, dtype=torch.float32),
                              torch.logcumsumexp(q.float(), 1)),
          i8, i32, i64, b)


def test_float_scans_in_an_int8_programs_island_are_the_kernels_floats():
    """cumprod and logcumsumexp keep their running value in float32 on the device, where ATen keeps it in double:
    the host integer reference emulates the kernels (fp32_emulation), so an int8 program whose fp32 island scans
    stays bit-exact. The host runner's outputs equal the emulation's bit for bit, and PyTorch's differ."""
    from mcu_gen.firmware.host import run_on_host
    from mcu_gen.reference.integer import run_int8_reference
    from tests.test_ops_reduce import Builder

    rng = np.random.default_rng(3)
    x = (1.0 + 0.01 * rng.standard_normal((3, 300))).astype(np.float32)
    bld = Builder()
    xi = bld.input(x)
    for op in ("aten::cumprod.out", "aten::logcumsumexp.out"):
        args = [xi, bld.scalar("int", 1)] + ([bld.scalar("none")] if op == "aten::cumprod.out" else [])
        bld.p.outputs.append(bld.call(op, args, x.shape, "float32"))
    device, host = run_on_host(bld.p, bld.feeds), run_int8_reference(bld.p, bld.feeds)
    for got, want in zip(device, host):
        assert np.array_equal(got, want)
    t = torch.from_numpy(x)
    assert not np.array_equal(device[0], torch.cumprod(t, 1).numpy())
    assert not np.array_equal(device[1], torch.logcumsumexp(t, 1).numpy())
