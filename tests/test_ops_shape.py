"""Portable shape kernels (flip, repeat, arange, grid_sampler_2d) against PyTorch on the host
runner, float32 and integer/bool dtypes for the data-movement ones."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from test_ops_nn import Builder, sample

DTYPES = ("float32", "int32", "int64", "bool", "int8")


def test_flip_repeat():
    b = Builder()
    for dtype in DTYPES:
        for shape, dims in [((2, 3, 4), [0]), ((2, 3, 4), [1, -1]), ((5,), [0]), ((1, 2, 3, 4), [0, 1, 2, 3]),
                            ((3, 4), []), ((2, 0, 3), [1])]:
            x = sample(shape, dtype)
            b.call(f"flip {dtype} {shape} {dims}", "aten::flip.out", [b.input(x), b.s("int_list", dims)],
                   x.flip(dims))
        for shape, reps in [((2, 3), [2, 1]), ((2, 3), [1, 3]), ((2, 3), [2, 2, 2]), ((4,), [3]),
                            ((1, 2, 1, 3), [1, 2, 3, 1]), ((2, 3), [1, 1]), ((2, 3), [0, 2])]:
            x = sample(shape, dtype)
            b.call(f"repeat {dtype} {shape} {reps}", "aten::repeat.out", [b.input(x), b.s("int_list", reps)],
                   x.repeat(*reps))
    b.run(rtol=0, atol=0)


def test_arange():
    b = Builder()
    for start, end, step, dtype in [(0, 6, 1, torch.int64), (2, 11, 3, torch.int64), (5, -4, -2, torch.int32),
                                    (0.0, 1.0, 0.25, torch.float32), (-1.5, 2.0, 0.5, torch.float32),
                                    (0, 5, 1, torch.float32)]:
        want = torch.arange(start, end, step, dtype=dtype)
        kind = lambda v: "float" if isinstance(v, float) else "int"  # noqa: E731
        b.call(f"arange {start} {end} {step}", "aten::arange.start_out",
               [b.s(kind(start), start), b.s(kind(end), end), b.s(kind(step), step)], want)
    b.call("arange 7", "aten::arange.out", [b.s("int", 7)], torch.arange(7))
    b.call("arange 4.5 f", "aten::arange.out", [b.s("float", 4.5)], torch.arange(4.5, dtype=torch.float32))
    b.run(rtol=1e-6, atol=1e-6)


def test_grid_sampler_2d():
    b = Builder()
    for shape, out_hw in [((1, 2, 5, 6), (4, 3)), ((2, 3, 4, 4), (6, 5)), ((1, 1, 1, 3), (2, 2))]:
        x = sample(shape, "float32")
        grid = torch.rand(shape[0], *out_hw, 2) * 2.6 - 1.3  # some points outside
        for mode, mi in (("bilinear", 0), ("nearest", 1)):
            for pad, pi in (("zeros", 0), ("border", 1)):
                for ac in (False, True):
                    want = F.grid_sample(x, grid, mode=mode, padding_mode=pad, align_corners=ac)
                    b.call(f"grid {shape} {mode} {pad} ac={ac}", "aten::grid_sampler_2d.out",
                           [b.input(x), b.input(grid), b.s("int", mi), b.s("int", pi), b.s("bool", ac)], want)
    b.run(rtol=1e-5, atol=1e-5)
