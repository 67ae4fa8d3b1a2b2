"""Layout changes of int8 activations, for QuantLowering (lowering.py): the transposes between the channels-last
order of 4-dim int8 activations and logical order (to_nhwc, to_nchw, contig), and the memory-order views a byte
moving op runs on (memory_view, memory_result). The methods use the lowering's program, alias, emit, scalar and
int8_tensor.

A view (view / reshape / flatten / unflatten) of an int8 tensor in any memory order costs at most one transpose
(view_of): both shapes are merges of one finer shape (refinement), the input's order is an order of the finer
dims, and the result either is a view of the same bytes in some order or takes one transpose of the finer
memory-order view into the order it wants (channels-last for 4 dims).
"""
from __future__ import annotations

import numpy as np

from mcu_gen.program.ir import TensorValue
from mcu_gen.quantize.int8_common import NHWC, nontrivial_nhwc


def is_row_major(t) -> bool:
    """True when t's bytes are in logical (row-major) order: its non-unit dims are in order."""
    if t.dim_order is None:
        return True
    big = [d for d in t.dim_order if t.shape[d] != 1]
    return big == sorted(big)


def refinement(a, s):
    """(sizes F, for each dim of a its F dims, the same for s): the finest shape F of which a and s are both merges
    of consecutive dims (a dim of size 1 has no F dims); None when there is none (e.g. (2, 3) -> (3, 2)) or a dim
    is 0."""
    if 0 in a or 0 in s:
        return None
    ca, cs = np.cumprod([1] + list(a)).tolist(), np.cumprod([1] + list(s)).tolist()
    bounds = sorted(set(ca) | set(cs))
    if any(y % x for x, y in zip(bounds, bounds[1:])):
        return None
    at = {b: i for i, b in enumerate(bounds)}
    dims = lambda c: [list(range(at[c[d]], at[c[d + 1]])) for d in range(len(c) - 1)]  # noqa: E731
    return [y // x for x, y in zip(bounds, bounds[1:])], dims(ca), dims(cs)


def order_over(fine_order: list, dims: list, prefer=None):
    """The dim order of a shape whose dims are `dims` (lists of fine dims) over bytes whose fine dims are in
    `fine_order`, or None when its dims' fine dims are not each consecutive and in order there. Dims of size 1
    (no fine dims) go first, unless `prefer` (an order) agrees on the others."""
    pos = {f: i for i, f in enumerate(fine_order)}
    big = [d for d in range(len(dims)) if dims[d]]
    for d in big:
        at = [pos[f] for f in dims[d]]
        if at != list(range(at[0], at[0] + len(at))):
            return None
    found = sorted(big, key=lambda d: pos[dims[d][0]])
    if prefer is not None and [d for d in prefer if dims[d]] == found:
        return tuple(prefer)
    return tuple([d for d in range(len(dims)) if not dims[d]] + found)


def order_without(order, dims) -> tuple:
    """A memory order with the logical `dims` taken out and the dims after them renumbered: the order of what a
    reduction or a select over those dims leaves."""
    return tuple(o - sum(d < o for d in dims) for o in order if o not in dims)


class Int8Layouts:
    def to_nhwc(self, v: int, node=None) -> int:
        t = self.program.tensor(v)
        if len(t.shape) != 4 or t.dim_order == NHWC:
            return v
        if not nontrivial_nhwc(t.shape):
            return self.alias(v, t.shape, NHWC, t.name + "_nhwc")
        n, c, h, w = t.shape
        out = self.program.add(TensorValue((n, h, w, c), t.dtype, name=t.name + "_nhwc", scale=t.scale,
                                           zero_point=t.zero_point))
        self.emit("cortex_m::transpose.out", [v, self.scalar("int_list", [0, 2, 3, 1])], out, node)
        return self.alias(out, t.shape, NHWC, t.name + "_nhwc_view")

    def to_nchw(self, v: int, node=None) -> int:
        t = self.program.tensor(v)
        if len(t.shape) != 4 or t.dim_order != NHWC:
            return self.contig(v, node)
        if not nontrivial_nhwc(t.shape):
            return self.alias(v, t.shape, None, t.name + "_nchw")
        n, c, h, w = t.shape
        flat = self.alias(v, (n, h, w, c), None, t.name + "_as_nhwc")
        out = self.program.add(TensorValue(t.shape, t.dtype, name=t.name + "_nchw", scale=t.scale,
                                           zero_point=t.zero_point))
        self.emit("cortex_m::transpose.out", [flat, self.scalar("int_list", [0, 3, 1, 2])], out, node)
        return out

    def memory_view(self, v: int):
        """(v as its bytes' row-major tensor: a view whose dims are v's in memory order, that order). A byte
        moving op (a constant pad, a slice, a select) runs on the view with its dims mapped through the order, and
        its result keeps the order (memory_result): no transpose before or after it."""
        t = self.program.tensor(v)
        order = tuple(t.dim_order or range(len(t.shape)))
        if order == tuple(range(len(order))):
            return v, order
        return self.alias(v, tuple(t.shape[d] for d in order), None, t.name + "_mem"), order

    def memory_result(self, shape, order, scale, zp, name: str):
        """(the row-major int8 tensor an op on memory views writes, the result: it as `shape` in `order`)."""
        nd = len(shape)
        mem = self.int8_tensor(tuple(shape[d] for d in order), scale, zp, tuple(range(4)) if nd == 4 else None,
                               name + "_mem" if order != tuple(range(nd)) else name)
        if order == tuple(range(nd)):
            return mem, mem
        return mem, self.alias(mem, tuple(shape), order, name)

    def contig(self, v: int, node=None) -> int:
        """v in logical (row-major) memory order: an alias when it is already, else a transpose."""
        t = self.program.tensor(v)
        if t.dim_order is None:
            return v
        if is_row_major(t):
            return self.alias(v, t.shape, None, t.name + "_c")
        out = self.program.add(TensorValue(t.shape, t.dtype, name=t.name + "_c", scale=t.scale,
                                           zero_point=t.zero_point))
        self.emit("cortex_m::transpose.out", [v, self.scalar("int_list", list(range(len(t.shape))))], out, node)
        return out

    def view_of(self, v: int, shape, name: str, node=None, any_order: bool = False):
        """v (int8, any order) seen as `shape` (a view or reshape: the same elements in logical order), with at most
        one transpose into the order the lowering keeps (channels-last for 4 nontrivial dims, else row-major): the
        same bytes where they are in it (or in any order, with `any_order`: the result is only viewed or permuted
        again), else one transpose of the finer memory-order view. None where the shapes have no common
        refinement (the caller copies to logical order first)."""
        t = self.program.tensor(v)
        ref = refinement(t.shape, shape)
        if ref is None:
            return None
        fine, a_dims, s_dims = ref
        order = t.dim_order or tuple(range(len(t.shape)))
        fine_in = [f for d in order for f in a_dims[d]]
        want = NHWC if len(shape) == 4 else tuple(range(len(shape)))
        same = order_over(fine_in, s_dims, want)  # (want itself where it agrees on the dims of size > 1)
        if same is not None and (same == want or any_order):
            return self.alias(v, shape, None if same == tuple(range(len(shape))) else same, name)
        fine_out = [f for d in want for f in s_dims[d]]
        mem = self.alias(v, tuple(fine[f] for f in fine_in), None, t.name + "_fine")
        out = self.program.add(TensorValue(tuple(fine[f] for f in fine_out), t.dtype, name=name + "_fine",
                                           scale=t.scale, zero_point=t.zero_point))
        self.emit("cortex_m::transpose.out", [mem, self.scalar("int_list", [fine_in.index(f) for f in fine_out])],
                  out, node)
        return self.alias(out, shape, None if len(shape) != 4 else want, name)
