"""Static memory planning: every activation tensor gets a fixed offset in one arena.

Lifetimes are instruction steps: a graph input is live from step 0, a tensor
from the instruction that writes it to the last instruction that reads it, a
graph output until the end. Views recorded in ``program.meta["aliases"]``
share their source's bytes (and extend its lifetime). Placement tries several
orders (by size, by lifetime start, by conflict count) with best-fit offsets and
keeps the smallest arena; ``check_plan`` proves that no two co-live tensors
overlap. The lower bound is the most bytes live at any one step.
"""
from __future__ import annotations

from dataclasses import dataclass

from .ir import Program, ScalarValue, TensorValue

ALIGNMENT = 16


class PlanError(ValueError):
    pass


@dataclass
class Interval:
    value: int  # representative value index (alias root)
    size: int
    start: int
    end: int
    offset: int = -1


def _align(n: int, a: int = ALIGNMENT) -> int:
    return (n + a - 1) // a * a


def _tensor_args(program: Program, args):
    """Tensor value indices among an instruction's args (expanding tensor lists)."""
    for a in args:
        v = program.values[a]
        if isinstance(v, TensorValue):
            yield a
        elif isinstance(v, ScalarValue) and v.kind in ("tensor_list", "optional_tensor_list"):
            for t in v.value:
                if t is not None and t >= 0:
                    yield t


def _alias_root(aliases: dict, v: int) -> int:
    seen = set()
    while v in aliases:
        if v in seen:
            raise PlanError(f"alias cycle at value {v}")
        seen.add(v)
        v = aliases[v]
    return v


def lifetimes(program: Program) -> dict:
    """Map alias-root value index -> Interval for every arena tensor."""
    aliases = program.meta.get("aliases", {})
    n = len(program.instructions)
    iv: dict[int, Interval] = {}

    def touch(v: int, step: int):
        t = program.values[v]
        if not isinstance(t, TensorValue) or t.is_constant:
            return
        r = _alias_root(aliases, v)
        root = program.values[r]
        size = max(t.nbytes, root.nbytes)
        if r not in iv:
            iv[r] = Interval(r, size, step, step)
        else:
            it = iv[r]
            it.size = max(it.size, size)
            it.start = min(it.start, step)
            it.end = max(it.end, step)

    for v in program.inputs:
        touch(v, 0)
    for step, ins in enumerate(program.instructions):
        for a in _tensor_args(program, ins.args):
            touch(a, step)
    for v in program.outputs:
        touch(v, max(n - 1, 0))
    # Inputs live from the start, outputs to the end.
    for v in program.inputs:
        t = program.values[v]
        if isinstance(t, TensorValue) and not t.is_constant:
            iv[_alias_root(aliases, v)].start = 0
    for v in program.outputs:
        t = program.values[v]
        if isinstance(t, TensorValue) and not t.is_constant:
            iv[_alias_root(aliases, v)].end = max(n - 1, 0)
    return iv


def lower_bound(intervals) -> int:
    """Most bytes live at any single step (no placement can do better)."""
    if not intervals:
        return 0
    events = {}
    for it in intervals:
        for s in range(it.start, it.end + 1):
            events[s] = events.get(s, 0) + it.size
    return max(events.values())


def _overlap(a: Interval, b: Interval) -> bool:
    return a.start <= b.end and b.start <= a.end


def _place(order) -> int:
    placed: list[Interval] = []
    top = 0
    for it in order:
        # Best fit: the smallest gap between live neighbours that holds it.
        busy = sorted((p.offset, p.offset + _align(p.size)) for p in placed if _overlap(p, it))
        need = _align(it.size)
        best, best_gap = None, None
        cursor = 0
        for lo, hi in busy:
            if lo - cursor >= need:
                gap = lo - cursor
                if best_gap is None or gap < best_gap:
                    best, best_gap = cursor, gap
            cursor = max(cursor, hi)
        if best is None:
            best = cursor
        it.offset = best
        placed.append(it)
        top = max(top, best + need)
    return top


def plan(program: Program) -> Program:
    """Assign arena offsets in place; sets program.arena_size and program.lower_bound."""
    iv = lifetimes(program)
    items = list(iv.values())
    conflicts = {it.value: sum(1 for o in items if o is not it and _overlap(o, it)) for it in items}
    orders = [
        sorted(items, key=lambda i: (-i.size, i.start)),
        sorted(items, key=lambda i: (i.start, -i.size)),
        sorted(items, key=lambda i: (-conflicts[i.value], -i.size)),
        sorted(items, key=lambda i: (-(i.end - i.start), -i.size)),
    ]
    best = None
    for order in orders:
        for it in items:
            it.offset = -1
        top = _place(order)
        if best is None or top < best[0]:
            best = (top, {it.value: it.offset for it in items})
    top, offsets = best if best else (0, {})
    aliases = program.meta.get("aliases", {})
    for i, v in enumerate(program.values):
        if isinstance(v, TensorValue) and not v.is_constant:
            r = _alias_root(aliases, i)
            if r in offsets:
                v.offset = offsets[r]
            else:  # never used: give it a harmless place (no bytes are touched)
                v.offset = 0 if v.nbytes == 0 else None
                if v.offset is None:
                    v.offset = 0
                    top = max(top, _align(v.nbytes))
    program.arena_size = top
    program.lower_bound = lower_bound(items)
    check_plan(program)
    return program


def check_plan(program: Program) -> None:
    """Raise PlanError unless every pair of co-live arena tensors is disjoint,
    every tensor is aligned and inside the arena."""
    iv = lifetimes(program)
    items = list(iv.values())
    for it in items:
        t = program.values[it.value]
        if t.offset is None or t.offset % ALIGNMENT:
            raise PlanError(f"tensor {it.value} is not aligned (offset {t.offset})")
        if t.offset + it.size > program.arena_size:
            raise PlanError(f"tensor {it.value} ends at {t.offset + it.size}, past the arena ({program.arena_size})")
    for i, a in enumerate(items):
        ta = program.values[a.value]
        for b in items[i + 1 :]:
            if not _overlap(a, b):
                continue
            tb = program.values[b.value]
            if ta.offset < tb.offset + b.size and tb.offset < ta.offset + a.size:
                raise PlanError(
                    f"tensors {a.value} [{ta.offset}, {ta.offset + a.size}) and {b.value} "
                    f"[{tb.offset}, {tb.offset + b.size}) are live together at steps "
                    f"{max(a.start, b.start)}..{min(a.end, b.end)} and overlap"
                )
