"""median, nanmedian (with and without dim), kthvalue and mode (kernels_portable/select_common.h and their op_*.cpp
files) exported from PyTorch functions and run on the host build against PyTorch CPU: values and indices exact,
including which of equal elements is returned (ties of small-integer-valued floats), NaN, all-NaN slices of many
lengths, int dtypes, dims that are not the last, keepdim, 0-dim inputs, and slices longer than the kernels' stack
arrays (256 elements) where they are exact; where they are not (kthvalue's and mode's ties in long slices), the
values are exact and the indices point at elements of that value."""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction
from tests.op_check import check
from tests.test_ops_reduce import Builder

NAN = float("nan")


def _ties(shape, seed, nan_fraction=0.0, low=-3, high=4):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(low, high, shape, generator=g).float()
    if nan_fraction:
        x[torch.rand(shape, generator=g) < nan_fraction] = NAN
    return x


def test_median_nanmedian_ties_nan_all_nan_rows_ints_and_long_slices():
    a = _ties((3, 4, 9), 0, 0.1)  # ties and NaNs, along every dim
    a[1, 2, :] = NAN  # an all-NaN row along the last dim (9), and columns along dims 0 (3) and 1 (4)
    a[:, 0, 1] = NAN
    a[2, :, 5] = NAN
    b = _ties((4, 6), 1)  # no NaN: median without dim; even and odd lengths
    z = torch.tensor([-1.0, 0.0, -1.0, -1.0, -1.0, 1.0, 0.0, -0.0, -0.0])  # median -0.0: std::nth_element's zero
    nans = torch.full((6, 37), NAN)  # all NaN: lengths 6 and 37 (and 1..8 below)
    long = _ties((2, 300), 2, 0.02, 0, 20)  # longer than the stack array: (value, index) order, exact
    long[1] = _ties((300,), 3, 0.0, 0, 20)
    i32 = torch.randint(-5, 5, (5, 6), generator=torch.Generator().manual_seed(4), dtype=torch.int32)
    u8 = torch.randint(0, 6, (4, 7), generator=torch.Generator().manual_seed(5), dtype=torch.uint8)
    i8 = torch.randint(-4, 4, (6, 3), generator=torch.Generator().manual_seed(6), dtype=torch.int8)
    i16 = torch.randint(-4, 4, (2, 8), generator=torch.Generator().manual_seed(7), dtype=torch.int16)
    i64 = torch.randint(-4, 4, (3, 5), generator=torch.Generator().manual_seed(8), dtype=torch.int64)

    def f(a, b, z, nans, long, i32, u8, i8, i16, i64):
        outs = []
        for median in (torch.median, torch.nanmedian):
            outs += [*median(a, -1), *median(a, 0), *median(a, 1, keepdim=True), *median(a, -2),
                     *median(a, 2, keepdim=True), *median(b, 1), *median(b, 0, keepdim=True), *median(nans, 0),
                     *median(nans, -1, keepdim=True), *median(long, 1), *median(long, 0),
                     *median(i32, 1), *median(i32, 0), *median(u8, 1), *median(i8, 0), *median(i16, -1),
                     *median(i64, 0, keepdim=True), *median(a[0, 0, 0], 0), *median(a[1, 2, 0], -1, keepdim=True),
                     median(a), median(b), 1.0 / median(z), median(long), median(long[1]), median(i32),
                     median(u8), median(i8), median(i16), median(i64), median(a[0, 1, 2]), median(nans),
                     median(nans[0, :5])]
            for n in range(1, 9):
                outs += [*median(nans[0, :n], 0)]
        return tuple(outs)

    check(f, a, b, z, nans, long, i32, u8, i8, i16, i64)


def test_kthvalue_and_mode_ties_nan_ints_bool_and_long_distinct_slices():
    a = _ties((3, 5, 20), 10, 0.1)  # up to 16 elements: insertion sorts; 20: std::sort's partitions
    a[0, 3, :] = NAN
    mid = _ties((2, 200), 11, 0.05, 0, 6)  # 200 elements: the step-for-step algorithms on the stack array
    mid_ints = _ties((200, 3), 12, 0.0, -2, 3).to(torch.int16)
    g = torch.Generator().manual_seed(13)
    long = torch.stack([torch.randperm(300, generator=g), torch.randperm(300, generator=g)]).float() - 150
    long[1, 17] = NAN  # distinct values: the long slices' order is ATen's
    i32 = torch.randint(-3, 3, (4, 9), generator=g, dtype=torch.int32)
    u8 = torch.randint(0, 4, (9, 4), generator=g, dtype=torch.uint8)
    i8 = torch.randint(-3, 3, (3, 7), generator=g, dtype=torch.int8)
    i64 = torch.randint(-3, 3, (5, 33), generator=g, dtype=torch.int64)
    flags = torch.rand((4, 23), generator=g) < 0.5

    def f(a, mid, mid_ints, long, i32, u8, i8, i64, flags):
        return (*torch.kthvalue(a, 1), *torch.kthvalue(a, 7, 2), *torch.kthvalue(a, 20, -1, True),
                *torch.kthvalue(a, 2, 0), *torch.kthvalue(a, 3, -2, keepdim=True), *torch.kthvalue(mid, 1, 1),
                *torch.kthvalue(mid, 100), *torch.kthvalue(mid, 190), *torch.kthvalue(mid_ints, 77, 0),
                *torch.kthvalue(long, 1), *torch.kthvalue(long, 150), *torch.kthvalue(long, 300),
                *torch.kthvalue(long, 1, 0), *torch.kthvalue(i32, 5), *torch.kthvalue(u8, 4, 0),
                *torch.kthvalue(i8, 2), *torch.kthvalue(i64, 17, 1, True), *torch.kthvalue(a[0, 0, 0], 1),
                *torch.kthvalue(a[1, 1, 1], 1, 0, True),
                *torch.mode(a), *torch.mode(a, 0), *torch.mode(a, 1, keepdim=True), *torch.mode(a[:, :, :16]),
                *torch.mode(mid), *torch.mode(mid, 0), *torch.mode(mid_ints, 0), *torch.mode(long),
                *torch.mode(i32), *torch.mode(u8, 0), *torch.mode(i8, -1, True), *torch.mode(i64),
                *torch.mode(flags), *torch.mode(flags, 0), *torch.mode(a[2, 2, 2]), *torch.mode(flags[1, 1], 0, True))

    check(f, a, mid, mid_ints, long, i32, u8, i8, i64, flags)


def _call(bld, op, args, values, indices):
    bld.p.instructions.append(Instruction(op, list(args) + [values, indices,
                                                           bld.scalar("tensor_list", [values, indices])]))
    bld.p.outputs += [values, indices]


def test_kthvalue_and_mode_long_slices_with_ties():
    """Longer than 256, with ties and no NaN: ATen's values, and indices of elements of that value (which of the
    equal elements ATen returns there depends on its sort's permutation)."""
    bld = Builder()
    xa = np.random.default_rng(3).integers(0, 9, (3, 400)).astype(np.float32)
    x = bld.input(xa)
    tx = torch.from_numpy(xa)
    cases = []
    for k in (1, 37, 200, 400):
        cases.append(torch.kthvalue(tx, k, 1)[0].numpy())
        _call(bld, "aten::kthvalue.values", [x, bld.scalar("int", k), bld.scalar("int", 1), bld.scalar("bool", False)],
              bld.p.add_tensor((3,), "float32"), bld.p.add_tensor((3,), "int64"))
    cases.append(torch.mode(tx, 1)[0].numpy())
    _call(bld, "aten::mode.values", [x, bld.scalar("int", 1), bld.scalar("bool", False)],
          bld.p.add_tensor((3,), "float32"), bld.p.add_tensor((3,), "int64"))
    outs = run_on_host(bld.p, bld.feeds)
    for n, want in enumerate(cases):
        got_v, got_i = outs[2 * n], outs[2 * n + 1]
        np.testing.assert_array_equal(got_v, want, err_msg=str(n))
        np.testing.assert_array_equal(np.take_along_axis(xa, got_i[:, None], axis=1)[:, 0], want, err_msg=str(n))
