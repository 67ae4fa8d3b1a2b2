"""Static memory planning: every activation tensor gets a fixed offset in one arena.

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
2. In place (mcu_gen/plan/inplace.py): where a kernel's registry line allows it and
   the input dies at that instruction, the out starts at the input's offset.
   An input and the outputs written over it form one *buffer* whose size varies
   by step (e.g. 5,408 B until a max pool, 1,352 B after it). Where a variant
   kernel does the in-place work (``variant_of=``), the instruction is switched
   to it and given the scratch it needs.
3. Placement (mcu_gen/plan/placement.py): several greedy strategies (orders by size, start, conflicts,
   lifetime, area; first fit and best fit), then an exact branch-and-bound
   search over placement orders, bounded by a node count (``NODE_LIMIT``, never by
   wall-clock time, so the same program always gets the same plan and the same
   .pte bytes however loaded the machine is) and stopped as soon as the
   arena equals the lower bound. The smallest arena wins; a plan with in-place
   is kept only if it is smaller than the plan without.
4. ``check_plan`` proves the result: every tensor aligned and inside the arena,
   and no two tensors live at the same step share a byte, except an input and
   the out written over it at the step where the input dies, at the same offset,
   with the kernel's declared permission; every view and slice where its link says.

``program.lower_bound`` is the layer-wise bound of the program as planned (copies
removed; most bytes live at any one step, no in-place); in-place can go below it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from mcu_gen.plan import inplace as inplace_rules
from mcu_gen.plan import slices as slice_rules
from mcu_gen.program.ir import DTYPE_SIZES, Program, ScalarValue, TensorValue
from mcu_gen.errors import McuGenError
from mcu_gen.plan.placement import ALIGNMENT, Placement, align, make_buffers, peak_steps, place_around


class PlanError(McuGenError, ValueError):
    pass


class InplaceNotAllowed(PlanError):
    """An output planned over an input its kernel here cannot overwrite in place. Another
    runtime's kernels may allow it, so a .pte's plan is then planned again, not rejected."""


@dataclass
class Interval:
    value: int  # representative value index (alias root)
    size: int
    start: int
    end: int
    offset: int = -1


def tensor_args(program: Program, args):
    """Tensor value indices among an instruction's args (expanding tensor lists)."""
    for a in args:
        v = program.values[a]
        if isinstance(v, TensorValue):
            yield a
        elif isinstance(v, ScalarValue) and v.kind in ("tensor_list", "optional_tensor_list"):
            for t in v.value:
                if t is not None and t >= 0:
                    yield t


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


def _sliced_roots(program: Program, links_: dict) -> set:
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


def _overlap(a, b) -> bool:
    return a.start <= b.end and b.start <= a.end


# -- in-place -----------------------------------------------------------------------------------
@dataclass
class InPlacePair:
    step: int
    out: int  # alias root written at ``step``
    src: int  # alias root it is written over (dies at ``step``)
    arg: int  # argument position of src in the instruction
    kernel_op: str  # the kernel that does it (may be a variant of the instruction's op)
    scratch: tuple | None = None


@lru_cache(maxsize=1)
def _default_kernels():
    from mcu_gen.backends.kernels import find_kernels

    return find_kernels()


def find_inplace(program: Program, iv: dict, available: dict) -> list:
    """The in-place opportunities of a program, one per instruction at most, in step order
    (never over or into a concatenation output that holds slices)."""
    aliases = links(program)
    outputs = {alias_root(aliases, v) for v in program.outputs}
    states = {alias_root(aliases, v) for v in program.states}
    sliced = _sliced_roots(program, aliases)
    tail = {}  # buffer head -> its latest member
    head = {}
    pairs = []
    for step, ins in enumerate(program.instructions):
        for kernel, ip in inplace_rules.options(program, ins, available):
            o = inplace_rules.out_value(ins, kernel.signature)
            ro, ri = alias_root(aliases, o), alias_root(aliases, ins.args[ip.arg])
            if (ro == ri or ro not in iv or ri not in iv or ri in outputs or ro in sliced or ri in sliced
                    or ro in states or ri in states):
                continue
            if iv[ri].end != step or iv[ro].start != step or ro in head:
                continue
            h = head.get(ri, ri)
            if tail.get(h, ri) != ri:
                continue
            # The out must not be read through another argument of this instruction.
            others = [a for k, a in enumerate(ins.args) if k != len(ins.args) - 1 and a != o]
            if any(alias_root(aliases, a) == ro for a in others if isinstance(program.values[a], TensorValue)):
                continue
            head[ri] = h
            head[ro] = h
            tail[h] = ro
            pairs.append(InPlacePair(step, ro, ri, ip.arg, kernel.op, ip.scratch))
            break
    return pairs


def _apply_inplace(program: Program, pairs) -> None:
    """Switch instructions to their in-place variant kernels and give them their scratch."""
    for p in pairs:
        ins = program.instructions[p.step]
        ins.op = p.kernel_op
        if p.scratch is None:
            continue
        pos, nbytes = p.scratch
        cur = program.values[ins.args[pos]]
        if isinstance(cur, TensorValue) and not cur.is_constant and cur.nbytes >= nbytes and cur.dtype == "int8":
            continue
        ins.args[pos] = program.add(TensorValue((nbytes,), "int8", name=f"inplace_scratch_{p.step}"))


@dataclass
class _Layout:
    placement: Placement
    bufs: list
    pairs: list
    layer_bound: int


def _snapshot(program: Program) -> tuple:
    return (list(program.instructions), [(ins.op, list(ins.args)) for ins in program.instructions],
            list(program.values), dict(program.meta.get("aliases", {})), dict(program.meta.get("slices", {})))


def _restore(program: Program, snap: tuple) -> None:
    instructions, ops, values, aliases, slices = snap
    program.instructions[:] = instructions
    for ins, (op, args) in zip(instructions, ops):
        ins.op, ins.args = op, args
    program.values[:] = values
    program.meta["aliases"] = aliases
    if slices:
        program.meta["slices"] = slices
    else:
        program.meta.pop("slices", None)


def _layout(program: Program, node_limit: int, allow_inplace: bool, available: dict,
            fixed: dict | None = None, reserve: int = 0) -> _Layout:
    """Place the program's buffers, with in-place where it makes the arena smaller
    (switching instructions to in-place variants in that case)."""
    iv = lifetimes(program)
    layer_bound = lower_bound(list(iv.values()))
    plain_bufs = make_buffers(iv, [])
    best = _Layout(place_around(plain_bufs, node_limit, fixed, reserve), plain_bufs, [], layer_bound)
    if allow_inplace:
        pairs = find_inplace(program, iv, available)
        if pairs:
            snap = _snapshot(program)
            _apply_inplace(program, pairs)
            bufs = make_buffers(lifetimes(program), pairs)
            pl = place_around(bufs, node_limit, fixed, reserve)
            if pl.top < best.placement.top:
                best = _Layout(pl, bufs, pairs, layer_bound)
            else:  # no gain: keep the program as it was
                _restore(program, snap)
    return best


def plan(program: Program, node_limit: int | None = None, allow_inplace: bool = True, available=None,
         remove_copies: bool = True, fixed: dict | None = None, reserve: int = 0) -> Program:
    """Assign arena offsets in place; sets program.arena_size, program.lower_bound and
    program.meta["plan"] (strategy, bounds, in-place pairs, peak steps, removed copies).

    With ``remove_copies`` (mcu_gen/plan/slices.py): no-op pads/permutes become views, and
    concatenations whose inputs can be written straight into slices of the output
    disappear, if that does not make the arena larger. ``fixed`` (plan_methods): value -> offset of
    the state tensors several methods share, kept there; everything else is planned above them and
    above ``reserve`` bytes (the state of every method)."""
    available = _default_kernels() if available is None else available
    removed = slice_rules.remove_noop_copies(program) if remove_copies else []
    before = _snapshot(program)
    layout = _layout(program, node_limit, allow_inplace, available, fixed, reserve)
    cats = 0
    if remove_copies and any(slice_rules.cat_slices(program, ins) for ins in program.instructions):
        without = _snapshot(program)
        without_layout = layout
        _restore(program, before)
        cats = slice_rules.slice_concatenations(program)
        layout = _layout(program, node_limit, allow_inplace, available, fixed, reserve)
        if layout.placement.top > without_layout.placement.top:  # slices made it worse: copy instead
            _restore(program, without)
            layout, cats = without_layout, 0
    placement, bufs, pairs = layout.placement, layout.bufs, layout.pairs
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
    program.lower_bound = layout.layer_bound
    program.meta["inplace"] = [[p.step, p.out, p.src] for p in pairs]
    program.meta["plan"] = {
        "strategy": placement.strategy,
        "packing_bound": placement.bound,
        "exact_search_complete": placement.exact_complete,
        "strategies": placement.tried,
        "inplace": [{"step": p.step, "op": program.instructions[p.step].op, "out": p.out, "over": p.src}
                    for p in pairs],
        "removed_copies": removed + [slice_rules.CAT_OP] * cats,
        "peak_steps": peak_steps(bufs, top),
    }
    check_plan(program, available)
    return program


# -- proof ----------------------------------------------------------------------------------------
def inplace_from_offsets(program: Program, available=None) -> list:
    """``meta["inplace"]`` entries ([step, out, src]) recovered from a plan's offsets (a program
    read from a .pte): every instruction whose out is first written at the offset of an argument
    that dies there. check_plan then checks each against its kernel's rule."""
    kernels = _default_kernels() if available is None else available
    iv = lifetimes(program)
    aliases = links(program)
    pairs = []
    for step, ins in enumerate(program.instructions):
        k = kernels.get(ins.op)
        o = inplace_rules.out_value(ins, k.signature) if k is not None else None
        if o is None:
            continue
        out = alias_root(aliases, o)
        if out not in iv or iv[out].start != step:
            continue
        for a in ins.args:
            src = alias_root(aliases, a)
            if (src != out and src in iv and iv[src].end == step and [step, out, src] not in pairs
                    and program.values[src].nbytes > 0  # an empty tensor (a scratch of 0 bytes) overlaps nothing
                    and program.values[src].offset == program.values[out].offset
                    and program.values[src].mem_id == program.values[out].mem_id):
                pairs.append([step, out, src])
    return pairs


def _allowed_inplace(program: Program, iv: dict, available: dict) -> set:
    """(out root, src root) pairs of program.meta["inplace"] that the instruction's own
    kernel allows, at the step where src dies and out is first written."""
    aliases = links(program)
    sliced = _sliced_roots(program, aliases)
    ok = set()
    for step, out, src in program.meta.get("inplace", []):
        if not (0 <= step < len(program.instructions)) or out not in iv or src not in iv:
            raise PlanError(f"in-place entry {[step, out, src]} does not name a step and two arena tensors")
        if iv[src].end != step or iv[out].start != step:
            raise PlanError(f"tensor {out} is planned over tensor {src} at step {step}, where {src} is not "
                            f"last read and {out} not first written")
        if out in sliced or src in sliced:
            raise PlanError(f"step {step}: in place over or into a concatenation output that holds slices")
        ins = program.instructions[step]
        kernel = available.get(ins.op)
        opts = inplace_rules.options(program, ins, {ins.op: kernel} if kernel else {})
        if not any(alias_root(aliases, inplace_rules.out_value(ins, k.signature)) == out
                   and alias_root(aliases, ins.args[o.arg]) == src and k.op == ins.op for k, o in opts):
            raise InplaceNotAllowed(f"step {step} ({ins.op}): its kernel does not allow its out {out} over {src}")
        ok.add((out, src))
    return ok


def _check_links(program: Program, iv: dict) -> None:
    """Every view at its source's offset; every slice inside its concatenation output, at
    the output's offset plus its displacement, aligned for its dtype, apart from the others."""
    links_ = links(program)
    slices = program.meta.get("slices", {})
    taken: dict = {}  # output -> [(start, end, value)]
    for v, (r, d) in links_.items():
        if alias_root(links_, v) not in iv:
            continue
        t, target = program.values[v], program.values[r]
        if not isinstance(t, TensorValue) or not isinstance(target, TensorValue) or target.is_constant:
            raise PlanError(f"value {v} is a view or slice of value {r}, which is not an arena tensor")
        if t.offset is None or target.offset is None or t.offset != target.offset + d:
            raise PlanError(f"value {v} is at offset {t.offset}, not at {r}'s offset {target.offset} + {d}")
        if t.mem_id != target.mem_id:
            raise PlanError(f"value {v} is in memory {t.mem_id}, its source {r} in memory {target.mem_id}")
        if v not in slices:
            continue
        if d < 0 or d + t.nbytes > target.nbytes:
            raise PlanError(f"slice {v} [{d}, {d + t.nbytes}) is not inside value {r} ({target.nbytes} bytes)")
        if t.offset % min(DTYPE_SIZES[t.dtype], 8):
            raise PlanError(f"slice {v} at offset {t.offset} is not aligned for {t.dtype}")
        for lo, hi, w in taken.get(r, []):
            if d < hi and lo < d + t.nbytes:
                raise PlanError(f"slices {w} and {v} of value {r} overlap")
        taken.setdefault(r, []).append((d, d + t.nbytes, v))


def check_plan(program: Program, available=None) -> None:
    """Raise PlanError unless every pair of co-live arena tensors is disjoint (or an
    allowed in-place pair at the same offset), every tensor is aligned and inside the arena,
    and every view and slice sits where its link says."""
    iv = lifetimes(program)
    _check_links(program, iv)
    items = list(iv.values())
    if program.meta.get("inplace"):
        allowed = _allowed_inplace(program, iv, _default_kernels() if available is None else available)
    else:
        allowed = set()
    sizes = program.arena_sizes
    for it in items:
        t = program.values[it.value]
        if t.offset is None or t.offset % ALIGNMENT:
            raise PlanError(f"tensor {it.value} is not aligned (offset {t.offset})")
        if not 1 <= t.mem_id <= len(sizes):
            raise PlanError(f"tensor {it.value} is in memory {t.mem_id}; the program plans memories 1..{len(sizes)}")
        arena = sizes[t.mem_id - 1]
        if t.offset + it.size > arena:
            where = "the arena" if len(sizes) == 1 else f"arena {t.mem_id}"
            raise PlanError(f"tensor {it.value} ends at {t.offset + it.size}, past {where} ({arena})")
    for i, a in enumerate(items):
        ta = program.values[a.value]
        for b in items[i + 1:]:
            if not _overlap(a, b) or a.size == 0 or b.size == 0:
                continue
            tb = program.values[b.value]
            if ta.mem_id != tb.mem_id:
                if (a.value, b.value) in allowed or (b.value, a.value) in allowed:
                    raise PlanError(f"tensor {b.value} is written over tensor {a.value} in place but the two are "
                                    f"in memories {tb.mem_id} and {ta.mem_id}")
                continue
            if ta.offset < tb.offset + b.size and tb.offset < ta.offset + a.size:
                if ta.offset == tb.offset and ((a.value, b.value) in allowed or (b.value, a.value) in allowed):
                    continue
                raise PlanError(
                    f"tensors {a.value} [{ta.offset}, {ta.offset + a.size}) and {b.value} "
                    f"[{tb.offset}, {tb.offset + b.size}) are live together at steps "
                    f"{max(a.start, b.start)}..{min(a.end, b.end)} and overlap"
                )


# -- programs with several methods -----------------------------------------------------------------
def plan_methods(program: Program, node_limit: int | None = None, allow_inplace: bool = True, available=None,
                 remove_copies: bool = True) -> Program:
    """Plans every method of ``program`` (docs/methods.md). State tensors are shared by name: each is
    placed once, at the bottom of the arena, at the same offset in every method that uses it, and every
    method plans its other tensors above all shared state (so a method never overwrites a state that
    only another method uses). Each method's plan is proven by check_plan, then check_methods.
    The firmware's arena is the largest method's (Program.max_arena_size)."""
    methods = program.methods
    if len(methods) == 1:
        return plan(program, node_limit, allow_inplace, available, remove_copies)
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
        plan(m, node_limit, allow_inplace, available, remove_copies, fixed=fixed, reserve=top)
    check_methods(program, available)
    return program


def check_methods(program: Program, available=None) -> None:
    """check_plan for every method, and across methods: a state tensor (by name) has one shape and one
    offset in every method, and no method places another tensor over the bytes of any state, its own
    or another method's (the state must survive a call of any method)."""
    states = {}
    for m in program.methods:
        check_plan(m, available)
        for i, name in zip(m.states, m.state_names):
            t = m.tensor(i)
            if name in states and (states[name][0], states[name][2]) != (t.offset, t.nbytes):
                raise PlanError(f"state {name} is at offset {t.offset} ({t.nbytes} B) in method {m.name}, at "
                                f"{states[name][0]} ({states[name][2]} B) in method {states[name][1]}")
            states.setdefault(name, (t.offset, m.name, t.nbytes))
    if len(program.methods) == 1:
        return
    for m in program.methods:
        iv = lifetimes(m)
        own = {alias_root(links(m), s) for s in m.states}
        for root, it in iv.items():
            if root in own or it.size == 0:
                continue
            lo = m.values[root].offset
            for name, (off, owner, nbytes) in states.items():
                if lo < off + nbytes and off < lo + it.size:
                    raise PlanError(f"method {m.name}: tensor {root} [{lo}, {lo + it.size}) overlaps state {name} "
                                    f"[{off}, {off + nbytes}) of method {owner}")
