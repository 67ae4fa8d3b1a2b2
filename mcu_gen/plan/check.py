"""The proof of a memory plan, independent of the planner that made it.

``check_plan`` reads only what the program itself says (its instructions, inputs, outputs,
states, ``meta["aliases"]`` / ``meta["slices"]`` links, ``meta["inplace"]`` pairs and each
tensor's offset and memory) and the kernels' in-place rules (mcu_gen/plan/inplace.py). It
computes every tensor's live steps itself (``live_steps``), not with the planner's helpers, so
a planner bug in lifetimes, buffers or placement cannot hide from it:

- every arena tensor aligned and inside its arena;
- no two tensors live at the same step share a byte, except an input and the out written over
  it at the step where the input dies, at the same offset, with the kernel's declared permission
  (``meta["inplace"]``; ``inplace_from_offsets`` recovers the pairs of a .pte's plan);
- every view at its source's offset, every slice inside its concatenation output.

``check_methods`` adds the rules of a program with several methods (shared state).
"""
from __future__ import annotations

from dataclasses import dataclass

from mcu_gen.errors import McuGenError
from mcu_gen.plan import inplace as inplace_rules
from mcu_gen.plan.placement import ALIGNMENT
from mcu_gen.program.ir import DTYPE_SIZES, Program, TensorValue, tensor_args


class PlanError(McuGenError, ValueError):
    pass


class InplaceNotAllowed(PlanError):
    """An output planned over an input its kernel here cannot overwrite in place. Another
    runtime's kernels may allow it, so a .pte's plan is then planned again, not rejected."""


@dataclass
class Live:
    """The bytes one arena tensor (with the views and slices inside it) needs, and when."""
    root: int
    size: int
    first: int  # first step it is live
    last: int  # last step it is live


def _link_table(program: Program) -> dict:
    """value -> (value whose bytes it uses, byte displacement)."""
    table = {}
    for v, r in program.meta.get("aliases", {}).items():
        table[v] = (r, 0)
    for v, (r, d) in program.meta.get("slices", {}).items():
        if v in table:
            raise PlanError(f"value {v} is both a view and a slice")
        table[v] = (r, d)
    return table


def _owner(table: dict, v: int) -> tuple:
    """(the arena tensor whose bytes ``v`` uses, ``v``'s byte displacement inside it)."""
    path, disp = [v], 0
    while v in table:
        v, d = table[v]
        disp += d
        if v in path:
            raise PlanError(f"alias cycle at value {v}")
        path.append(v)
    return v, disp


def live_steps(program: Program) -> dict:
    """Arena tensor (root of its views and slices) -> Live. A tensor is live at every step whose
    instruction names it (or a view or slice of it); a graph input or state from step 0, a graph
    output or state until the last step."""
    table = _link_table(program)
    last_step = max(len(program.instructions) - 1, 0)
    steps: dict[int, set] = {}
    size: dict[int, int] = {}
    uses = [(v, 0) for v in list(program.inputs) + list(program.states)]
    uses += [(v, s) for s, ins in enumerate(program.instructions) for v in tensor_args(program, ins.args)]
    uses += [(v, last_step) for v in list(program.outputs) + list(program.states)]
    for v, s in uses:
        t = program.values[v]
        if not isinstance(t, TensorValue) or t.is_constant:
            continue
        r, disp = _owner(table, v)
        steps.setdefault(r, set()).add(s)
        size[r] = max(size.get(r, 0), disp + t.nbytes, program.values[r].nbytes)
    pinned_first = {_owner(table, v)[0] for v in list(program.inputs) + list(program.states)}
    pinned_last = {_owner(table, v)[0] for v in list(program.outputs) + list(program.states)}
    return {r: Live(r, size[r], 0 if r in pinned_first else min(s), last_step if r in pinned_last else max(s))
            for r, s in steps.items()}


def _sliced(program: Program, table: dict) -> set:
    """Arena tensors that hold slices (concatenation outputs their producers write)."""
    return {_owner(table, r)[0] for r, _ in program.meta.get("slices", {}).values()}


# -- in place -------------------------------------------------------------------------------------
def inplace_from_offsets(program: Program, available=None) -> list:
    """``meta["inplace"]`` entries ([step, out, src]) recovered from a plan's offsets (a program
    read from a .pte): every instruction whose out is first written at the offset of an argument
    that dies there. check_plan then checks each against its kernel's rule."""
    kernels = inplace_rules.default_kernels() if available is None else available
    live = live_steps(program)
    table = _link_table(program)
    pairs = []
    for step, ins in enumerate(program.instructions):
        k = kernels.get(ins.op)
        o = inplace_rules.out_value(ins, k.signature) if k is not None else None
        if o is None:
            continue
        out = _owner(table, o)[0]
        if out not in live or live[out].first != step:
            continue
        for a in ins.args:
            src = _owner(table, a)[0]
            if (src != out and src in live and live[src].last == step and [step, out, src] not in pairs
                    and program.values[src].nbytes > 0  # an empty tensor (a scratch of 0 bytes) overlaps nothing
                    and program.values[src].offset == program.values[out].offset
                    and program.values[src].mem_id == program.values[out].mem_id):
                pairs.append([step, out, src])
    return pairs


def _allowed_inplace(program: Program, live: dict, available: dict) -> set:
    """(out, src) pairs of program.meta["inplace"] that the instruction's own kernel allows, at
    the step where src dies and out is first written."""
    table = _link_table(program)
    sliced = _sliced(program, table)
    ok = set()
    for step, out, src in program.meta.get("inplace", []):
        if not (0 <= step < len(program.instructions)) or out not in live or src not in live:
            raise PlanError(f"in-place entry {[step, out, src]} does not name a step and two arena tensors")
        if live[src].last != step or live[out].first != step:
            raise PlanError(f"tensor {out} is planned over tensor {src} at step {step}, where {src} is not "
                            f"last read and {out} not first written")
        if out in sliced or src in sliced:
            raise PlanError(f"step {step}: in place over or into a concatenation output that holds slices")
        ins = program.instructions[step]
        kernel = available.get(ins.op)
        opts = inplace_rules.options(program, ins, {ins.op: kernel} if kernel else {})
        if not any(_owner(table, inplace_rules.out_value(ins, k.signature))[0] == out
                   and _owner(table, ins.args[o.arg])[0] == src and k.op == ins.op for k, o in opts):
            raise InplaceNotAllowed(f"step {step} ({ins.op}): its kernel does not allow its out {out} over {src}")
        ok.add((out, src))
    return ok


# -- the proof ------------------------------------------------------------------------------------
def _check_links(program: Program, live: dict) -> None:
    """Every view at its source's offset; every slice inside its concatenation output, at
    the output's offset plus its displacement, aligned for its dtype, apart from the others."""
    table = _link_table(program)
    slices = program.meta.get("slices", {})
    taken: dict = {}  # output -> [(start, end, value)]
    for v, (r, d) in table.items():
        if _owner(table, v)[0] not in live:
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
    live = live_steps(program)
    _check_links(program, live)
    if program.meta.get("inplace"):
        allowed = _allowed_inplace(program, live, inplace_rules.default_kernels() if available is None else available)
    else:
        allowed = set()
    sizes = program.arena_sizes
    items = list(live.values())
    for it in items:
        t = program.values[it.root]
        if t.offset is None or t.offset % ALIGNMENT:
            raise PlanError(f"tensor {it.root} is not aligned (offset {t.offset})")
        if not 1 <= t.mem_id <= len(sizes):
            raise PlanError(f"tensor {it.root} is in memory {t.mem_id}; the program plans memories 1..{len(sizes)}")
        arena = sizes[t.mem_id - 1]
        if t.offset + it.size > arena:
            where = "the arena" if len(sizes) == 1 else f"arena {t.mem_id}"
            raise PlanError(f"tensor {it.root} ends at {t.offset + it.size}, past {where} ({arena})")
    for i, a in enumerate(items):
        ta = program.values[a.root]
        for b in items[i + 1:]:
            together = a.first <= b.last and b.first <= a.last
            if not together or a.size == 0 or b.size == 0:
                continue
            tb = program.values[b.root]
            over = (a.root, b.root) in allowed or (b.root, a.root) in allowed
            if ta.mem_id != tb.mem_id:
                if over:
                    raise PlanError(f"tensor {b.root} is written over tensor {a.root} in place but the two are "
                                    f"in memories {tb.mem_id} and {ta.mem_id}")
                continue
            if ta.offset < tb.offset + b.size and tb.offset < ta.offset + a.size:
                if ta.offset == tb.offset and over:
                    continue
                raise PlanError(
                    f"tensors {a.root} [{ta.offset}, {ta.offset + a.size}) and {b.root} "
                    f"[{tb.offset}, {tb.offset + b.size}) are live together at steps "
                    f"{max(a.first, b.first)}..{min(a.last, b.last)} and overlap"
                )


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
        table = _link_table(m)
        own = {_owner(table, s)[0] for s in m.states}
        for root, it in live_steps(m).items():
            if root in own or it.size == 0:
                continue
            lo = m.values[root].offset
            for name, (off, owner, nbytes) in states.items():
                if lo < off + nbytes and off < lo + it.size:
                    raise PlanError(f"method {m.name}: tensor {root} [{lo}, {lo + it.size}) overlaps state {name} "
                                    f"[{off}, {off + nbytes}) of method {owner}")
