"""The in-place pass: which outs are written over one of their inputs, and with which kernels.

Run once a build knows its kernels (after the backend choice, mcu_gen/firmware/builder.py), before
the planner places (mcu_gen/plan/planner.py, which chooses nothing):

    plan_memory(program, available, allow_inplace=..., refuse=...)

Where a kernel's registry line allows it (the rules: mcu_gen/plan/inplace.py) and the input dies
at that instruction, the out may start at the input's offset. Where a variant kernel does the
in-place work (``variant_of=``), the instruction is switched to it and given the scratch it needs.
The pass keeps its choice only if the placed arena is smaller than without it, and records it in
``program.meta["inplace"]`` ([step, out, over]), which the planner places, the report shows
(``meta["plan"]["inplace"]``) and mcu_gen/plan/check.py proves against the kernels' rules.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from mcu_gen.plan import inplace as inplace_rules
from mcu_gen.plan import planner
from mcu_gen.program.ir import Program, TensorValue


@dataclass
class InPlacePair:
    step: int
    out: int  # alias root written at ``step``
    src: int  # alias root it is written over (dies at ``step``)
    arg: int  # argument position of src in the instruction
    kernel_op: str  # the kernel that does it (may be a variant of the instruction's op)
    scratch: tuple | None = None


def find_inplace(program: Program, iv: dict, available: dict, skip=frozenset()) -> list:
    """The in-place opportunities of a program, one per instruction at most, in step order
    (never over or into a concatenation output that holds slices); none of ``skip``'s (step, variant op)."""
    aliases = planner.links(program)
    outputs = {planner.alias_root(aliases, v) for v in program.outputs}
    states = {planner.alias_root(aliases, v) for v in program.states}
    sliced = planner.sliced_roots(program, aliases)
    tail = {}  # buffer head -> its latest member
    head = {}
    pairs = []
    for step, ins in enumerate(program.instructions):
        for kernel, ip in inplace_rules.options(program, ins, available):
            if (step, kernel.op) in skip:
                continue
            o = inplace_rules.out_value(ins, kernel.signature)
            ro, ri = planner.alias_root(aliases, o), planner.alias_root(aliases, ins.args[ip.arg])
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
            if any(planner.alias_root(aliases, a) == ro for a in others if isinstance(program.values[a], TensorValue)):
                continue
            head[ri] = h
            head[ro] = h
            tail[h] = ro
            pairs.append(InPlacePair(step, ro, ri, ip.arg, kernel.op, ip.scratch))
            break
    return pairs


def apply_inplace(program: Program, pairs) -> None:
    """Switch instructions to their in-place variant kernels, give them their scratch, and record
    the pairs in ``meta["inplace"]`` for the planner."""
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
    program.meta["inplace"] = [[p.step, p.out, p.src] for p in pairs]


def choose(program: Program, available: dict, node_limit=None, fixed=None, reserve: int = 0,
           refuse=None) -> planner.Layout:
    """The pass on one program (planner.plan runs it on the program with and without the copies of
    its concatenations): the layout with in-place where that makes the arena smaller, else the
    layout without. ``refuse(program, step, kernel_op)``, asked on the program with the pairs applied:
    True where the build would rather not run that variant kernel there (the generated kernels take
    the base operator's layer but not the variant's). The variant is then left out at that step, one
    step at a time and only where that does not make the arena larger than with every variant taken (the
    default build's RAM stays within the library build's: there the variant and its portable kernel stay);
    other layers keep their variants."""
    program.meta["inplace"] = []
    plain = planner.layout(program, node_limit, fixed, reserve)
    skip, kept, lean, trial = set(), set(), None, None
    while True:
        pairs = find_inplace(program, planner.lifetimes(program), available, skip)
        before = planner.snapshot(program)
        lay = plain
        if pairs:
            apply_inplace(program, pairs)
            lay = planner.layout(program, node_limit, fixed, reserve)
            if lay.placement.top >= plain.placement.top:  # no gain: the program as it was
                planner.restore(program, before)
                lay, pairs = plain, []
        if lean is None:
            lean = lay.placement.top
        if trial is not None and lay.placement.top > lean:  # that refusal costs arena bytes: keep the variant
            if pairs:
                planner.restore(program, before)
            skip.discard(trial)
            kept.add(trial)
            trial = None
            continue
        refused = sorted((p.step, p.kernel_op) for p in pairs if refuse is not None and (p.step, p.kernel_op)
                         not in kept and refuse(program, p.step, p.kernel_op))
        if not refused:
            return replace(lay, layer_bound=plain.layer_bound) if pairs else lay  # the bound counts no in-place
        planner.restore(program, before)
        trial = refused[0]
        skip.add(trial)


def pass_for(available=None, allow_inplace: bool = True, refuse=None):
    """The pass as planner.plan's ``choose`` (run on each program the planner is about to place):
    ``choose`` above with these kernels, or (without ``allow_inplace``) no in-place at all."""
    kernels = inplace_rules.default_kernels() if available is None else available
    if allow_inplace:
        def pass_(p, limit, fixed, reserve):
            return choose(p, kernels, limit, fixed, reserve, refuse)
    else:
        def pass_(p, limit, fixed, reserve):
            p.meta["inplace"] = []
            return planner.layout(p, limit, fixed, reserve)
    return pass_


def plan_memory(program: Program, available=None, node_limit=None, allow_inplace: bool = True,
                remove_copies: bool = True, refuse=None) -> Program:
    """The memory stage of a program whose kernels are known: copies removed where that helps, this
    pass's in-place choice (none without ``allow_inplace``), then the planner's placement (every method
    of a program with several). ``available``: the kernels whose registry lines allow in-place (default:
    the kernel registry). Returns the planned program."""
    return planner.plan_methods(program, node_limit, available, remove_copies,
                                choose=pass_for(available, allow_inplace, refuse))
