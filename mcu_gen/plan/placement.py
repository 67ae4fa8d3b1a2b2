"""Placement: offsets for buffers (tensors that share memory through in-place, each with the bytes it
uses at each step) so that buffers live at one step never share a byte, in the smallest arena found.

Several greedy strategies (orders by size, start, conflicts, lifetime, area, end; first fit and best
fit), then an exact branch-and-bound search over placement orders, bounded by a node count
(``NODE_LIMIT``, never by wall-clock time, so the same program always gets the same plan) and stopped
as soon as the arena equals the packing bound. The planner (planner.py) decides what the buffers are."""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

ALIGNMENT = 16
NODE_LIMIT = 20000  # search nodes of the exact search per placement (deterministic, not a timer)


def align(n: int, a: int = ALIGNMENT) -> int:
    return (n + a - 1) // a * a


# -- buffers: tensors that share memory through in-place ------------------------------------------
@dataclass
class Buffer:
    members: list  # alias roots, the first is the buffer's name
    start: int
    end: int
    sizes: list  # aligned bytes used at each step start..end
    offset: int = -1

    @property
    def size(self) -> int:
        return max(self.sizes) if self.sizes else 0

    def at(self, step: int) -> int:
        return self.sizes[step - self.start] if self.start <= step <= self.end else 0


def make_buffers(iv: dict, pairs) -> list:
    parent = {r: r for r in iv}

    def find(r):
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for p in pairs:
        parent[find(p.out)] = find(p.src)
    groups: dict[int, list] = {}
    for r in sorted(iv, key=lambda r: (iv[r].start, r)):
        groups.setdefault(find(r), []).append(r)
    out = []
    for members in groups.values():
        start = min(iv[m].start for m in members)
        end = max(iv[m].end for m in members)
        sizes = [0] * (end - start + 1)
        for m in members:
            it = iv[m]
            for s in range(it.start, it.end + 1):
                sizes[s - start] = max(sizes[s - start], align(it.size))
        out.append(Buffer(members, start, end, sizes))
    return out


def packing_bound(bufs) -> int:
    """Most aligned bytes live at one step: no placement of these buffers is smaller."""
    live: dict[int, int] = {}
    for b in bufs:
        for s in range(b.start, b.end + 1):
            live[s] = live.get(s, 0) + b.at(s)
    return max(live.values(), default=0)


# -- placement --------------------------------------------------------------------------------------
def conflicts(bufs) -> list:
    """conf[i][j] = (most bytes of i, most bytes of j) over the steps both are live, or None."""
    n = len(bufs)
    conf = [[None] * n for _ in range(n)]
    # A buffer of one size at every step of its life (most are) conflicts with its full size: no step loop.
    flat = [bool(b.sizes) and min(b.sizes) == max(b.sizes) > 0 for b in bufs]
    by_start = sorted(range(n), key=lambda i: bufs[i].start)
    for x, i in enumerate(by_start):
        a = bufs[i]
        for j in by_start[x + 1:]:
            b = bufs[j]
            if b.start > a.end:
                break  # every later buffer starts after a ends
            lo, hi = b.start, min(a.end, b.end)
            if flat[i] and flat[j]:
                ma, mb = a.sizes[0], b.sizes[0]
            else:
                ma = mb = 0
                for s in range(lo, hi + 1):
                    u, v = a.at(s), b.at(s)
                    if u and v:
                        ma, mb = max(ma, u), max(mb, v)
            if ma and mb:
                conf[i][j] = (ma, mb)
                conf[j][i] = (mb, ma)
    return conf


def _blocks(i, offsets, conf) -> list:
    """Buffer i's blocked offsets: open ranges (lo, hi) (offset o is blocked where lo < o < hi), sorted."""
    row = conf[i]
    return sorted((off - c[0], off + c[1]) for j, off in offsets.items() if (c := row[j]) is not None)


def first_fit(i, offsets, conf) -> int:
    """The lowest free offset: one pass over the blocked ranges by their low ends."""
    o = 0
    for lo, hi in _blocks(i, offsets, conf):
        if lo >= o:
            break  # this range and every later one start at or above o: o is free
        if hi > o:
            o = hi
    return o


def best_fit(i, offsets, conf) -> int:
    """Of the free offsets that are 0 or an end of a blocked range, the one with the least room up to the
    next blocked range above it (the lower offset on a tie)."""
    blocks = _blocks(i, offsets, conf)
    los = [lo for lo, _ in blocks]
    merged_lo, merged_hi = [], []  # the blocked ranges' union: disjoint open ranges
    for lo, hi in blocks:
        if merged_hi and lo < merged_hi[-1]:
            merged_hi[-1] = max(merged_hi[-1], hi)
        else:
            merged_lo.append(lo)
            merged_hi.append(hi)
    best = None
    for o in {0, *(hi for _, hi in blocks), *(lo for lo in los if lo >= 0)}:  # (slack, o) is unique: any order
        k = bisect_left(merged_lo, o) - 1  # the one merged range that starts below o
        if k >= 0 and o < merged_hi[k]:
            continue
        k = bisect_left(los, o)
        key = (los[k] - o if k < len(los) else float("inf"), o)
        if best is None or key < best:
            best = key
    return best[1]


def place_in_order(order, bufs, conf, fit) -> tuple:
    offsets = {}
    top = 0
    for i in order:
        o = fit(i, offsets, conf)
        offsets[i] = o
        top = max(top, o + bufs[i].size)
    return top, offsets


def orders(bufs, conf) -> dict:
    idx = range(len(bufs))
    degree = [sum(bufs[j].size for j in idx if conf[i][j]) for i in idx]
    length = [b.end - b.start + 1 for b in bufs]
    return {
        "size": sorted(idx, key=lambda i: (-bufs[i].size, bufs[i].start)),
        "start": sorted(idx, key=lambda i: (bufs[i].start, -bufs[i].size)),
        "conflicts": sorted(idx, key=lambda i: (-degree[i], -bufs[i].size)),
        "lifetime": sorted(idx, key=lambda i: (-length[i], -bufs[i].size)),
        "area": sorted(idx, key=lambda i: (-sum(bufs[i].sizes), bufs[i].start)),
        "end": sorted(idx, key=lambda i: (-bufs[i].end, -bufs[i].size)),
    }


def _refit(fits: dict, k: int, ok: int, offsets: dict, conf) -> dict:
    """The lowest free offsets of the unplaced buffers once buffer k is placed at ``ok`` (``offsets``
    has it): ``fits`` (before k) where k does not block that offset, else first_fit again."""
    out = {}
    for i, o in fits.items():
        if i == k:
            continue
        c = conf[i][k]
        if c is not None and ok - c[0] < o < ok + c[1]:
            o = first_fit(i, offsets, conf)
        out[i] = o
    return out


def exact_search(bufs, conf, best_top, bound, node_limit) -> tuple:
    """Branch and bound over placement orders, each buffer at its lowest free offset.
    Returns (top, offsets or None, complete)."""
    n = len(bufs)
    # Buffers with the same lifetime and sizes are interchangeable: branch on one of them.
    shape = [(b.start, b.end, tuple(b.sizes)) for b in bufs]
    by_size = sorted(range(n), key=lambda i: (-bufs[i].size, bufs[i].start))
    best = [best_top, None]
    complete = [True]
    nodes = [0]

    offsets: dict = {}
    size = [b.size for b in bufs]

    def children(top, fits):
        """The branches of a node (``fits``: each unplaced buffer's lowest free offset here; a buffer's offset in
        the parent stays its lowest here unless the buffer placed last blocks it): (buffer, offset, new top), one
        buffer of each shape, those that could still beat the best."""
        tried = set()
        for i in by_size:
            if i in offsets or shape[i] in tried:
                continue
            tried.add(shape[i])
            o = fits[i]
            t = max(top, o + size[i])
            if t < best[0]:
                yield i, o, t

    def enter(top, fits):
        """A node's branches, or None where it ends at once (every buffer placed, or the node limit)."""
        if len(offsets) == n:
            if top < best[0]:
                best[0], best[1] = top, dict(offsets)
            return None
        nodes[0] += 1
        if nodes[0] > node_limit:
            complete[0] = False
            return None
        return children(top, fits)

    # Depth first, the open nodes on a list (branches, fits, the buffer placed to reach it), not the call stack: a
    # program of a thousand buffers (an unrolled GRU) is a thousand levels deep.
    fits0 = dict.fromkeys(range(n), 0)
    root = enter(0, fits0)
    stack = [(root, fits0, None)] if root is not None else []
    while stack:
        branches, fits, placed = stack[-1]
        for i, o, t in branches:
            offsets[i] = o
            child_fits = _refit(fits, i, o, offsets, conf)
            child = enter(t, child_fits)
            if child is not None:
                stack.append((child, child_fits, i))
                break
            del offsets[i]
            if best[0] <= bound or not complete[0]:
                return _searched(best, complete, nodes)
        else:
            stack.pop()  # no more branches: back to the parent
            if placed is not None:
                del offsets[placed]
            if best[0] <= bound or not complete[0]:
                break
    return _searched(best, complete, nodes)


def _searched(best, complete, nodes) -> tuple:
    exact_search.last_nodes = nodes[0]
    return best[0], best[1], complete[0]


@dataclass
class Placement:
    top: int
    offsets: dict  # buffer index -> offset
    strategy: str
    bound: int
    exact_complete: bool = False
    tried: dict = field(default_factory=dict)  # strategy -> top


def place(bufs, node_limit: int | None = None) -> Placement:
    """Best placement of the buffers found by the greedy strategies and the exact search."""
    node_limit = NODE_LIMIT if node_limit is None else node_limit
    bound = packing_bound(bufs)
    if not bufs:
        return Placement(0, {}, "empty", 0, True)
    conf = conflicts(bufs)
    tried = {}
    best = None
    for name, order in orders(bufs, conf).items():
        for fit_name, fit in (("first-fit", first_fit), ("best-fit", best_fit)):
            top, offsets = place_in_order(order, bufs, conf, fit)
            key = f"{name}/{fit_name}"
            tried[key] = top
            if best is None or top < best.top:
                best = Placement(top, offsets, key, bound)
    if best.top > bound and node_limit > 0:
        top, offsets, complete = exact_search(bufs, conf, best.top, bound, node_limit)
        tried["exact"] = top
        if offsets is not None and top < best.top:
            best = Placement(top, offsets, "exact", bound)
        best.exact_complete = complete
    else:
        best.exact_complete = True  # the bound is reached: nothing smaller exists
    best.tried = tried
    return best


def place_around(bufs, node_limit: int, fixed: dict | None, reserve: int = 0) -> Placement:
    """place(), except that the buffers of the values in ``fixed`` (value -> offset: state tensors
    shared by several methods) keep their offsets and every other buffer goes above them and above
    ``reserve`` bytes (the state of every method)."""
    fixed = fixed or {}
    pinned = {k: fixed[m] for k, b in enumerate(bufs) for m in b.members if m in fixed}
    free = [k for k in range(len(bufs)) if k not in pinned]
    reserve = max([reserve] + [fixed[m] + align(b.size) for b in bufs for m in b.members if m in fixed])
    if not pinned and reserve == 0:
        return place(bufs, node_limit)
    pl = place([bufs[k] for k in free], node_limit)
    offsets = {k: pinned[k] for k in pinned}
    offsets.update({k: reserve + pl.offsets[j] for j, k in enumerate(free)})
    return Placement(reserve + pl.top, offsets, f"{pl.strategy}, above {reserve} B of shared state",
                     reserve + pl.bound, pl.exact_complete, {k: reserve + v for k, v in pl.tried.items()})


def peak_steps(bufs, arena: int) -> list:
    """The steps with the most bytes live (in-place outputs counted over their inputs):
    the instructions that set the arena size."""
    if not bufs or arena == 0:
        return []
    steps = range(min(b.start for b in bufs), max(b.end for b in bufs) + 1)
    live = {s: sum(b.at(s) for b in bufs) for s in steps}
    most = max(live.values())
    return [s for s in steps if live[s] == most]
