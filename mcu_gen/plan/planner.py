"""Static memory planning: every activation tensor gets a fixed offset in one arena.

The planner places; it chooses no in-place variant (the in-place pass, mcu_gen/plan/inplace_pass.py,
does, after the build has chosen its kernels) and proves nothing itself (mcu_gen/plan/check.py
does, with its own lifetimes).

0. Copies removed (mcu_gen/plan/slices.py): no-op pads/permutes become views, and a
   concatenation whose inputs are each one contiguous block of its output
   disappears: its producers write into slices of the output
   (``program.meta["slices"] = {input: (output, byte displacement)}``), kept
   unless the arena gets larger.
1. Lifetimes are instruction steps: a graph input is live from step 0, a tensor
   from the instruction that writes it to the last instruction that reads it, a
   graph output until the end. Views recorded in ``program.meta["aliases"]``
   share their source's bytes (and extend its lifetime); slices live inside their
   output (whose interval covers the producers). A scratch tensor that
   only one instruction uses lives for that step only.
2. In place: an out that ``program.meta["inplace"]`` (the pass's choice) puts over an input
   starts at the input's offset. An input and the outputs written over it form one *buffer*
   whose size varies by step (e.g. 5,408 B until a max pool, 1,352 B after it).
3. Placement (mcu_gen/plan/placement.py): several greedy strategies (orders by size, start, conflicts,
   lifetime, area; first fit and best fit), then an exact branch-and-bound
   search over placement orders, bounded by a node count (``NODE_LIMIT``, never by
   wall-clock time, so the same program always gets the same plan and the same
   .pte bytes however loaded the machine is) and stopped as soon as the
   arena equals the lower bound. The smallest arena wins.
4. ``check_plan`` (mcu_gen/plan/check.py) proves the result: every tensor aligned and inside the
   arena, and no two tensors live at the same step share a byte, except an input and
   the out written over it at the step where the input dies, at the same offset,
   with the kernel's declared permission; every view and slice where its link says.

``program.lower_bound`` is the layer-wise bound of the program as planned (copies
removed; most bytes live at any one step, no in-place); in-place can go below it.
"""
from __future__ import annotations

from dataclasses import dataclass

from mcu_gen.plan import slices as slice_rules
from mcu_gen.plan.check import InplaceNotAllowed, PlanError, check_methods, check_plan, inplace_from_offsets
from mcu_gen.plan.placement import Placement, align, make_buffers, peak_steps, place_around
from mcu_gen.program.ir import Program, TensorValue, tensor_args

# The proof (mcu_gen/plan/check.py) is the checker's own; these names stay reachable from here for callers.
__all__ = ["InplaceNotAllowed", "PlanError", "check_methods", "check_plan", "inplace_from_offsets", "Interval",
           "Layout", "lifetimes", "links", "resolve", "alias_root", "tensor_args", "lower_bound", "layout", "plan",
           "plan_methods", "snapshot", "restore"]


@dataclass
class Interval:
    value: int  # representative value index (alias root)
    size: int
    start: int
    end: int
    offset: int = -1


def links(program: Program) -> dict:
    """value -> (value it lives inside, byte displacement): views (``meta["aliases"]``,
    displacement 0) and slices of a concatenation's output (``meta["slices"]``)."""
    out = {v: (r, 0) for v, r in program.meta.get("aliases", {}).items()}
    for v, (r, d) in program.meta.get("slices", {}).items():
        if v in out:
            raise PlanError(f"value {v} is both a view and a slice")
        out[v] = (r, d)
    return out


def resolve(links_: dict, v: int) -> tuple:
    """(root, byte displacement of v inside the root)."""
    seen, disp = set(), 0
    while v in links_:
        if v in seen:
            raise PlanError(f"alias cycle at value {v}")
        seen.add(v)
        v, d = links_[v]
        disp += d
    return v, disp


def alias_root(links_: dict, v: int) -> int:
    return resolve(links_, v)[0]


def sliced_roots(program: Program, links_: dict) -> set:
    """Roots with slices inside them (concatenation outputs written by their producers)."""
    return {alias_root(links_, r) for r, _ in program.meta.get("slices", {}).values()}


def lifetimes(program: Program) -> dict:
    """Map root value index -> Interval for every arena tensor (views and slices
    count towards the tensor they live inside)."""
    aliases = links(program)
    n = len(program.instructions)
    iv: dict[int, Interval] = {}

    def touch(v: int, step: int):
        t = program.values[v]
        if not isinstance(t, TensorValue) or t.is_constant:
            return
        r, disp = resolve(aliases, v)
        root = program.values[r]
        size = max(disp + t.nbytes, root.nbytes)
        if r not in iv:
            iv[r] = Interval(r, size, step, step)
        else:
            it = iv[r]
            it.size = max(it.size, size)
            it.start = min(it.start, step)
            it.end = max(it.end, step)

    for v in list(program.inputs) + list(program.states):
        touch(v, 0)
    for step, ins in enumerate(program.instructions):
        for a in tensor_args(program, ins.args):
            touch(a, step)
    for v in list(program.outputs) + list(program.states):
        touch(v, max(n - 1, 0))
    # Inputs live from the start, outputs to the end, state tensors (kept from one run to the
    # next) for the whole run.
    for v in list(program.inputs) + list(program.states):
        t = program.values[v]
        if isinstance(t, TensorValue) and not t.is_constant:
            iv[alias_root(aliases, v)].start = 0
    for v in list(program.outputs) + list(program.states):
        t = program.values[v]
        if isinstance(t, TensorValue) and not t.is_constant:
            iv[alias_root(aliases, v)].end = max(n - 1, 0)
    return iv


def lower_bound(intervals) -> int:
    """Most bytes live at any single step (no placement without in-place can do better)."""
    if not intervals:
        return 0
    events = {}
    for it in intervals:
        for s in range(it.start, it.end + 1):
            events[s] = events.get(s, 0) + it.size
    return max(events.values())


# -- placement ------------------------------------------------------------------------------------
@dataclass
class Together:
    """An out placed over the input it is written over (a ``meta["inplace"]`` entry)."""
    step: int
    out: int
    src: int


@dataclass
class Layout:
    placement: Placement
    bufs: list
    pairs: list  # the meta["inplace"] entries placed ([step, out, src])
    layer_bound: int


def snapshot(program: Program) -> tuple:
    """What the rewrites before placement change (instructions, values, views, slices, in-place pairs)."""
    return (list(program.instructions), [(ins.op, list(ins.args)) for ins in program.instructions],
            list(program.values), dict(program.meta.get("aliases", {})), dict(program.meta.get("slices", {})),
            [list(e) for e in program.meta.get("inplace", [])])


def restore(program: Program, snap: tuple) -> None:
    instructions, ops, values, aliases, slices, inplace = snap
    program.instructions[:] = instructions
    for ins, (op, args) in zip(instructions, ops):
        ins.op, ins.args = op, args
    program.values[:] = values
    program.meta["aliases"] = aliases
    if slices:
        program.meta["slices"] = slices
    else:
        program.meta.pop("slices", None)
    program.meta["inplace"] = inplace


def layout(program: Program, node_limit: int | None = None, fixed: dict | None = None, reserve: int = 0) -> Layout:
    """Places the program's buffers as the program says them: every arena tensor on its own, except
    the outs that ``meta["inplace"]`` (the in-place pass's choice, mcu_gen/plan/inplace_pass.py) puts
    over an input, which share that input's buffer. Chooses nothing."""
    iv = lifetimes(program)
    pairs = [list(e) for e in program.meta.get("inplace", [])]
    bufs = make_buffers(iv, [Together(*e) for e in pairs])
    return Layout(place_around(bufs, node_limit, fixed, reserve), bufs, pairs, lower_bound(list(iv.values())))


def plan(program: Program, node_limit: int | None = None, available=None, remove_copies: bool = True,
         fixed: dict | None = None, reserve: int = 0, choose=None) -> Program:
    """Assign arena offsets in place; sets program.arena_size, program.lower_bound and
    program.meta["plan"] (strategy, bounds, in-place pairs, peak steps, removed copies).

    Places only: an out shares its input's bytes where ``meta["inplace"]`` says so (the in-place
    pass, mcu_gen/plan/inplace_pass.py, chose it), nowhere else. With ``remove_copies``
    (mcu_gen/plan/slices.py): no-op pads/permutes become views, and concatenations whose inputs
    can be written straight into slices of the output disappear, if that does not make the arena
    larger. ``choose(program, node_limit, fixed, reserve) -> Layout``: the caller's rewrite pass,
    run on the program with and without the concatenations' copies (inplace_pass.plan_memory passes
    the in-place pass); without it each is placed as it is. ``fixed`` (plan_methods): value -> offset
    of the state tensors several methods share, kept there; everything else is planned above them and
    above ``reserve`` bytes (the state of every method). ``available``: the kernels check_plan reads
    the in-place permissions from."""
    candidate = choose if choose is not None else layout
    removed = slice_rules.remove_noop_copies(program) if remove_copies else []
    before = snapshot(program)
    best = candidate(program, node_limit, fixed, reserve)
    cats = 0
    if remove_copies and any(slice_rules.cat_slices(program, ins) for ins in program.instructions):
        without = snapshot(program)
        without_layout = best
        restore(program, before)
        cats = slice_rules.slice_concatenations(program)
        best = candidate(program, node_limit, fixed, reserve)
        if best.placement.top > without_layout.placement.top:  # slices made it worse: copy instead
            restore(program, without)
            best, cats = without_layout, 0
    placement, bufs, pairs = best.placement, best.bufs, best.pairs
    root_offset = {}
    for k, b in enumerate(bufs):
        b.offset = placement.offsets[k]
        for m in b.members:
            root_offset[m] = b.offset
    top = placement.top
    aliases = links(program)
    for i, v in enumerate(program.values):
        if isinstance(v, TensorValue) and not v.is_constant:
            v.mem_id = 1  # one arena; mcu_gen/plan/regions.py may spread it over RAM regions
            r, disp = resolve(aliases, i)
            if r in root_offset:
                v.offset = root_offset[r] + disp
            else:  # never used: give it a harmless place (no bytes are touched)
                v.offset = 0
                top = max(top, align(v.nbytes))
    program.arena_size = top
    program.extra_arenas = []
    program.meta.pop("regions", None)
    program.lower_bound = best.layer_bound
    program.meta["inplace"] = [list(e) for e in pairs]
    program.meta["plan"] = {
        "strategy": placement.strategy,
        "packing_bound": placement.bound,
        "exact_search_complete": placement.exact_complete,
        "strategies": placement.tried,
        "inplace": [{"step": step, "op": program.instructions[step].op, "out": out, "over": src}
                    for step, out, src in pairs],
        "removed_copies": removed + [slice_rules.CAT_OP] * cats,
        "peak_steps": peak_steps(bufs, top),
    }
    check_plan(program, available)
    return program


# -- programs with several methods -----------------------------------------------------------------
def plan_methods(program: Program, node_limit: int | None = None, available=None, remove_copies: bool = True,
                 choose=None) -> Program:
    """Plans every method of ``program`` (docs/methods.md). State tensors are shared by name: each is
    placed once, at the bottom of the arena, at the same offset in every method that uses it, and every
    method plans its other tensors above all shared state (so a method never overwrites a state that
    only another method uses). ``choose``: as for plan (each method's own rewrite pass). Each method's
    plan is proven by check_plan, then check_methods.
    The firmware's arena is the largest method's (Program.max_arena_size)."""
    methods = program.methods
    if len(methods) == 1:
        return plan(program, node_limit, available, remove_copies, choose=choose)
    where, top = {}, 0
    for m in methods:
        for i, name in zip(m.states, m.state_names):
            t = m.tensor(i)
            if name in where:
                first = where[name][1]
                if (first.shape, first.dtype, first.dim_order) != (t.shape, t.dtype, t.dim_order):
                    raise PlanError(f"state {name} is {list(first.shape)} {first.dtype} in one method and "
                                    f"{list(t.shape)} {t.dtype} in method {m.name}")
                continue
            where[name] = (top, t)
            top += align(t.nbytes)
    for m in methods:
        fixed = {i: where[name][0] for i, name in zip(m.states, m.state_names)}
        plan(m, node_limit, available, remove_copies, fixed=fixed, reserve=top, choose=choose)
    check_methods(program, available)
    return program
