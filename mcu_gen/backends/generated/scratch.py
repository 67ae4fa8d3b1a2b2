"""The generated DSP layers' per-call buffers as planned arena tensors (issue 25: "per-call scratch in planned
arena scratch tensors, so the planner counts them").

A smmlar GEMM layer calls its GEMM with buffers that live for one call of the layer: the gathered windows of a
convolution (``conv_stream``'s patch), the output rows of an in-place 1x1 convolution (``gemm_stream_inplace``)
and the pair of input rows the two-row GEMM widens once (``_widen_rows``). On the stack the image's static stack
bound counts them on the deepest path, so they had to stay small (emit_dsp.wide_ok's WIDE_STACK_BYTES). Here
they go in the instruction's scratch tensor (argument 12 of the convolutions, after an in-place convolution's
ring of rows): the planner places it, live at that instruction only, in a gap of the arena.

``size_scratch`` runs once the build's plan is made (builder.plan_for_kernels): each such layer's scratch is
grown to its best choice (emit_dsp.scratch_levels: the widened rows, the most windows / rows; only choices as
good as the stack's) that the arena's free bytes at its step could hold, and the program is planned again; where the arena grows past the plan without them, the layers whose scratch ends above that
arena's top step down a choice and the program is planned again, a few rounds; if the arena still grows, the
plan without them is kept (the layers keep their buffers on the stack, as before). Deterministic: the planner
is (node limits, no timers), and so is this search. The generator (emit_dsp.work_plan) reads the scratch's size
back from the planned program: it takes the best choice that fits, else the stack.
"""
from __future__ import annotations

import copy

from mcu_gen.backends.generated.emit_dsp import work_bytes, scratch_levels
from mcu_gen.backends.generated.layers import CONV_SCRATCH_ARG
from mcu_gen.backends.generated.match import eligible
from mcu_gen.plan import planner
from mcu_gen.program.ir import Program, TensorValue

ROUNDS = 4  # plans with the buffers at most (each round steps the layers above the arena's top down a choice)


def _candidates(program: Program) -> list:
    """(layer, scratch tensor, bytes before the room) of the smmlar GEMM layers whose scratch tensor is theirs alone."""
    uses: dict = {}
    for ins in program.instructions:
        for a in ins.args:
            uses[a] = uses.get(a, 0) + 1
    out = []
    for l in eligible(program)[0]:
        if l.kind not in ("conv", "pointwise") or l.requant_kind != "smmlar" or not scratch_levels(l):
            continue
        arg = program.instructions[l.instruction].args[CONV_SCRATCH_ARG]
        t = program.values[arg]
        if not isinstance(t, TensorValue) or t.is_constant or len(t.shape) != 1 or uses.get(arg) != 1:
            continue
        if t.dtype not in ("int8", "uint8"):
            continue
        out.append((l, t, l.scratch_at))
    return out


def _free_bytes(program: Program, step: int, skip: TensorValue) -> int:
    """The arena's bytes (program.arena_size) that no tensor live at ``step`` (but ``skip``) takes in the current
    plan: more than a scratch can take there in any plan of this arena's size."""
    spans = []
    for root, iv in planner.lifetimes(program).items():
        t = program.values[root]
        if iv.start <= step <= iv.end and t is not skip and t.offset is not None:
            spans.append((int(t.offset), int(t.offset) + int(iv.size)))
    used, end = 0, 0
    for lo, hi in sorted(spans):
        lo = max(lo, end)
        if hi > lo:
            used, end = used + hi - lo, hi
    return program.arena_size - used


def size_scratch(program: Program, replan) -> bool:
    """Grows the scratch tensors of the program's smmlar GEMM layers to hold their per-call buffers where the
    arena (program.arena_size, as planned now) does not grow; ``replan()`` plans the program again (the build's
    own planning step). True when the program's plan changed."""
    cands = _candidates(program)
    if not cands:
        return False
    top = program.arena_size
    saved = copy.deepcopy(program.__dict__)
    original = {id(t): int(t.shape[0]) if t.dtype == "int8" else 0 for _, t, _ in cands}
    levels = {}  # per layer its first choice that the arena's free bytes at its step could hold
    for l, t, at in cands:
        free, opts = _free_bytes(program, l.instruction, t), scratch_levels(l)
        levels[l.instruction] = next((i for i, o in enumerate(opts) if at + work_bytes(l, *o) <= free), len(opts))
    cands = [c for c in cands if levels[c[0].instruction] < len(scratch_levels(c[0]))]
    if not cands:
        return False
    for _ in range(ROUNDS):
        for l, t, at in cands:
            opts = scratch_levels(l)
            lvl = levels[l.instruction]
            need = at + work_bytes(l, *opts[lvl]) if lvl < len(opts) else 0
            t.shape, t.dtype = (max(original[id(t)], need),), "int8"
        replan()
        if program.arena_size <= top:
            return True
        over = [l for l, t, _ in cands
                if levels[l.instruction] < len(scratch_levels(l)) and t.offset is not None and t.offset + t.nbytes > top]
        if not over:
            over = [l for l, _, _ in cands if levels[l.instruction] < len(scratch_levels(l))]
        if not over:
            break
        for l in over:
            levels[l.instruction] += 1
    program.__dict__.clear()
    program.__dict__.update(saved)
    return False
