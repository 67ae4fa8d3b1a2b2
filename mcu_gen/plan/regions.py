"""Several RAM regions: the planned program's buffers spread over a board's RAM regions.

A board may declare more than one RAM region (boards/<name>/board.toml `[ram]` plus
`[ram_regions.NAME]`, each with a speed rank: 1 = fastest). `place_in_regions` takes a program
the planner (mcu_gen/plan/planner.py) has already planned into one arena and decides, per
*buffer* (an alias root with its views and slices, or an in-place chain: bytes that must stay
together), which region it lives in; each region is then one arena with fixed offsets of its
own, and each tensor records its region as ExecuTorch's ``allocation_info.memory_id``
(1 = the board's main region, 2, 3, ... the others in board order), so the program stays a
valid ET12 program with several planned buffers (``non_const_buffer_sizes``).

Placement: the buffers most accessed per byte of size (bytes read + written per inference,
``access_bytes``) go first into the fastest region, as long as that region's arena (greedy
placement) stays inside its budget; what does not fit goes on to the next region. A pinned
region (``pin``) takes everything. When the one-arena plan already fits in the main region and
the main region is the fastest, nothing moves (the one-arena plan is the plan).
"""
from __future__ import annotations

from dataclasses import dataclass

from mcu_gen.errors import McuGenError
from mcu_gen.plan import placement, planner
from mcu_gen.program.ir import DTYPE_SIZES, Program, TensorValue


class RegionError(McuGenError, ValueError):
    """The arena does not fit the board's RAM regions, or a region name or budget is wrong."""


@dataclass(frozen=True)
class Region:
    name: str
    mem_id: int  # 1 = the main region
    speed: int  # 1 = fastest
    budget: int  # bytes of arena the planner may use in it


@dataclass
class _Pair:  # what placement.make_buffers needs of an in-place pair
    out: int
    src: int


def access_bytes(program: Program) -> dict:
    """Alias root -> bytes read and written per inference (a model of the kernels' traffic).

    An out is written once. An input read by an instruction with a constant weight (rank >= 2:
    convolutions, depthwise, fully connected) is read once per tap: numel(out) * taps elements,
    taps = numel(weight) / output channels (k*k*Cin for a convolution, k*k for a depthwise,
    in_features for a linear). Any other tensor argument is read once."""
    links = planner.links(program)
    out = {}

    def add(v, n):
        r = planner.alias_root(links, v)
        out[r] = out.get(r, 0) + n

    for ins in program.instructions:
        args = list(planner.tensor_args(program, ins.args))
        tensors = {a: program.values[a] for a in args}
        weights = [t for t in tensors.values() if t.is_constant and len(t.shape) >= 2]
        arena = [a for a, t in tensors.items() if not t.is_constant]
        if not arena:
            continue
        o = arena[-1]  # the out is the last argument (ExecuTorch's layout: the returns)
        ot = tensors[o]
        taps = 0
        if weights:
            w = max(weights, key=lambda t: t.numel)
            cout = ot.shape[1] if len(ot.shape) == 4 else (ot.shape[-1] if ot.shape else 1)
            taps = max(1, w.numel // max(1, cout))
        add(o, ot.nbytes)
        for a in dict.fromkeys(a for a in arena if a != o):  # the out is also an argument (out=, then returned)
            t = tensors[a]
            add(a, ot.numel * taps * DTYPE_SIZES[t.dtype] if taps else t.nbytes)
    return out


def _greedy_top(idx, bufs, conf) -> int:
    """Arena of buffers `idx` under the planner's greedy strategies (no exact search)."""
    if not idx:
        return 0
    sub = [bufs[i] for i in idx]
    subconf = [[conf[i][j] for j in idx] for i in idx]
    best = None
    for order in placement.orders(sub, subconf).values():
        for fit in (placement.first_fit, placement.best_fit):
            top, _ = placement.place_in_order(order, sub, subconf, fit)
            best = top if best is None else min(best, top)
    return best


def place_in_regions(program: Program, regions: list, pin: str | None = None,
                     node_limit: int | None = None, available=None) -> list:
    """Spread a planned program over `regions` (Region, memory id order); returns the per-region
    report (also ``program.meta["regions"]``). Raises RegionError naming the region and the bytes
    when the arena does not fit."""
    if not regions:
        raise RegionError("no RAM region given")
    names = [r.name for r in regions]
    if pin is not None and pin not in names:
        raise RegionError(f"--arena-region {pin!r}: the board's RAM regions are {', '.join(names)}")
    iv = planner.lifetimes(program)
    pairs = [_Pair(out, src) for _, out, src in program.meta.get("inplace", [])]
    bufs = placement.make_buffers(iv, pairs)
    traffic = access_bytes(program)
    acc = [sum(traffic.get(m, 0) for m in b.members) for b in bufs]
    by_speed = sorted(regions, key=lambda r: (r.speed, r.mem_id))
    main = next(r for r in regions if r.mem_id == 1)

    if pin is not None and pin == main.name and not program.extra_arenas:
        if program.arena_size > main.budget:
            raise RegionError(f"region {main.name!r}: the arena needs {program.arena_size:,} B, its budget is "
                              f"{main.budget:,} B ({program.arena_size - main.budget:,} B too many)")
        chosen = None  # pinned to the main region: the one-arena plan as it is
    elif pin is not None:
        chosen = {i: next(r for r in regions if r.name == pin) for i in range(len(bufs))}
    elif not program.extra_arenas and program.arena_size <= main.budget and main is by_speed[0]:
        chosen = None  # the one-arena plan fits the fastest region: it stays as it is
    else:
        conf = placement.conflicts(bufs)
        order = sorted(range(len(bufs)), key=lambda i: (-acc[i] / max(1, bufs[i].size), -bufs[i].size, i))
        chosen, left = {}, list(order)
        for r in by_speed:
            mine = []
            for i in list(left):
                if _greedy_top(mine + [i], bufs, conf) <= r.budget:
                    mine.append(i)
                    left.remove(i)
            chosen.update({i: r for i in mine})
        if left:  # report the overflow against the slowest region, where the rest would go
            last = by_speed[-1]
            idx = [i for i in range(len(bufs)) if chosen.get(i) is last] + left
            need = placement.place([bufs[i] for i in idx], node_limit).top
            raise RegionError(
                f"the arena does not fit the RAM regions: region {last.name!r} would need {need:,} B, its budget "
                f"is {last.budget:,} B ({need - last.budget:,} B too many; faster regions are full: "
                + ", ".join(f"{r.name} {r.budget:,} B" for r in by_speed[:-1]) + ")")

    sizes = {r.mem_id: 0 for r in regions}
    if chosen is None:
        sizes[1] = program.arena_size
        where = {i: main for i in range(len(bufs))}
    else:
        where = chosen
        root_place = {}
        for r in regions:
            idx = [i for i in range(len(bufs)) if where[i] is r]
            pl = placement.place([bufs[i] for i in idx], node_limit)
            if pl.top > r.budget:
                raise RegionError(f"region {r.name!r}: the arena needs {pl.top:,} B, its budget is {r.budget:,} B "
                                  f"({pl.top - r.budget:,} B too many)")
            sizes[r.mem_id] = pl.top
            for k, i in enumerate(idx):
                for m in bufs[i].members:
                    root_place[m] = (r.mem_id, pl.offsets[k])
        links = planner.links(program)
        for v, t in enumerate(program.values):
            if isinstance(t, TensorValue) and not t.is_constant:
                root, disp = planner.resolve(links, v)
                if root in root_place:
                    t.mem_id, base = root_place[root]
                    t.offset = base + disp
                else:  # never used: a harmless place in the main arena
                    t.mem_id, t.offset = 1, 0
                    sizes[1] = max(sizes[1], placement.align(t.nbytes))
    program.arena_size = sizes[1]
    extra = [sizes[r.mem_id] for r in sorted(regions, key=lambda r: r.mem_id) if r.mem_id > 1]
    while extra and extra[-1] == 0:
        extra.pop()
    program.extra_arenas = extra
    total = sum(acc) or 1
    report = []
    for r in sorted(regions, key=lambda r: r.mem_id):
        mine = [i for i in range(len(bufs)) if where[i] is r]
        report.append({
            "name": r.name, "memory_id": r.mem_id, "speed": r.speed, "budget_bytes": r.budget,
            "arena_bytes": sizes[r.mem_id], "buffers": len(mine),
            "tensor_bytes": sum(bufs[i].size for i in mine),
            "access_bytes": sum(acc[i] for i in mine),
            "access_share": round(sum(acc[i] for i in mine) / total, 4),
        })
    program.meta["regions"] = report
    planner.check_plan(program, available)
    return report
