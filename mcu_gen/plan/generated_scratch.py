"""The generated DSP layers' per-call buffers as planned arena tensors (issue 25: "per-call scratch in planned
arena scratch tensors, so the planner counts them").

A smmlar GEMM layer calls its GEMM with buffers that live for one call of the layer: the gathered windows of a
convolution (``conv_stream``'s patch), the output rows of an in-place 1x1 convolution (``gemm_stream_rows``)
and the pair of input rows the two-row GEMM widens once (``widen_rows``). On the stack the image's static stack
bound counts them on the deepest path, so they had to stay small (dsp_gemm_pairs.wide_ok's WIDE_STACK_BYTES). Here
they go in the instruction's scratch tensor (argument 12 of the convolutions, after an in-place convolution's
ring of rows): the planner places it, live at that instruction only, in a gap of the arena.

``size_scratch`` runs once the build's plan is made (builder.plan_for_kernels): each such layer's scratch is
grown to its best choice (dsp_work.scratch_levels: the widened rows, the most windows / rows; only choices as
good as the stack's) that the arena's free bytes at its step could hold, and the program is planned again; where the arena grows past the plan without them, the layers whose scratch ends above that
arena's top step down a choice and the program is planned again, a few rounds; if the arena still grows, the
plan without them is kept (the layers keep their buffers on the stack, as before). Deterministic: the planner
is (node limits, no timers), and so is this search. The generator (dsp_work.work_plan) reads the scratch's size
back from the planned program: it takes the best choice that fits, else the stack.
"""
from __future__ import annotations

from mcu_gen.backends.generated.dsp_work import scratch_levels, work_bytes
from mcu_gen.backends.generated.layers import CONV_SCRATCH_ARG
from mcu_gen.backends.generated.match import eligible
from mcu_gen.backends.generated_mve import patch_at, patch_bytes
from mcu_gen.plan import planner
from mcu_gen.program.ir import Program, TensorValue

ROUNDS = 4  # plans with the buffers at most (each round steps the layers above the arena's top down a choice)


def _scratch_tensor(program: Program, l, uses: dict):
    """The layer's scratch tensor (argument 12 of a convolution) if it is its alone (a planned 1-D int8/uint8 tensor)."""
    arg = program.instructions[l.instruction].args[CONV_SCRATCH_ARG]
    t = program.values[arg]
    if not isinstance(t, TensorValue) or t.is_constant or len(t.shape) != 1 or uses.get(arg) != 1:
        return None
    return t if t.dtype in ("int8", "uint8") else None


def scratch_candidates(program: Program, isa: str = "dsp") -> list:
    """(layer, scratch tensor, its sizes in bytes in the order of preference) of the layers whose scratch tensor
    is theirs alone: the DSP smmlar GEMM layers (their scratch_levels, after the ring of an in-place convolution),
    or (``isa`` "mve") the MVE convolutions (generated_mve.patch_at: the two gathered windows after the ring)."""
    uses: dict = {}
    for ins in program.instructions:
        for a in ins.args:
            uses[a] = uses.get(a, 0) + 1
    out = []
    for l in eligible(program, isa)[0]:
        if isa == "mve":
            sizes = [patch_at(l) + patch_bytes(l)] if l.kind == "conv" else []
        elif l.kind in ("conv", "pointwise") and l.requant_kind == "smmlar":
            sizes = [l.scratch_at + work_bytes(l, *o) for o in scratch_levels(l)]
        else:
            sizes = []
        t = _scratch_tensor(program, l, uses) if sizes else None
        if t is not None:
            out.append((l, t, sizes))
    return out


def _buffer_of(lay, value: int) -> int | None:
    return next((k for k, b in enumerate(lay.bufs) if value in b.members), None)


def _free_bytes(lay, step: int, skip: int | None) -> int:
    """The bytes of the layout's arena (its top) that no buffer live at ``step`` (but buffer ``skip``) takes:
    more than a scratch can take there in any placement of this arena's size."""
    spans = sorted((lay.placement.offsets[k], lay.placement.offsets[k] + b.at(step))
                   for k, b in enumerate(lay.bufs) if k != skip and b.at(step))
    used, end = 0, 0
    for lo, hi in spans:
        lo = max(lo, end)
        if hi > lo:
            used, end = used + hi - lo, hi
    return lay.placement.top - used


def size_scratch(program: Program, lay, relayout, isa: str = "dsp"):
    """Grows the scratch tensors of the program's smmlar GEMM layers to hold their per-call buffers where the
    arena of ``lay`` (the in-place pass's layout of the program as it is) does not grow; ``relayout()`` places the
    program again with the same in-place choice (planner.layout). Returns the layout that goes with the scratch
    sizes it leaves."""
    cands = scratch_candidates(program, isa)
    if not cands:
        return lay
    top = lay.placement.top
    original = {id(t): (t.shape, t.dtype) for _, t, _ in cands}
    value = {id(t): program.instructions[l.instruction].args[CONV_SCRATCH_ARG] for l, t, _ in cands}
    levels = {}  # per layer its first choice that the arena's free bytes at its step could hold
    for l, t, sizes in cands:
        free = _free_bytes(lay, l.instruction, _buffer_of(lay, value[id(t)]))
        levels[l.instruction] = next((i for i, n in enumerate(sizes) if n <= free), len(sizes))
    cands = [c for c in cands if levels[c[0].instruction] < len(c[2])]
    for _ in range(ROUNDS if cands else 0):
        for l, t, sizes in cands:
            lvl = levels[l.instruction]
            base = original[id(t)][0][0] if original[id(t)][1] == "int8" else 0
            t.shape, t.dtype = ((max(base, sizes[lvl]),), "int8") if lvl < len(sizes) else original[id(t)]
        new = relayout()
        if new.placement.top <= top:
            return new
        over = []
        for l, t, sizes in cands:
            k = _buffer_of(new, value[id(t)])
            if levels[l.instruction] < len(sizes) and k is not None and \
                    new.placement.offsets[k] + new.bufs[k].size > top:
                over.append(l)
        if not over:
            over = [l for l, _, sizes in cands if levels[l.instruction] < len(sizes)]
        if not over:
            break
        for l in over:
            levels[l.instruction] += 1
    for _, t, _ in cands:
        t.shape, t.dtype = original[id(t)]
    return lay


def scratch_pass(base, isa: str = "dsp"):
    """The planner's rewrite pass (planner.plan's ``choose``) with size_scratch after ``base`` (the in-place pass,
    inplace_pass.pass_for): on the pass's first run only. planner.plan runs the pass a second time on the program
    with its concatenations' copies removed and keeps whichever layout is smaller; the sizes the first run left
    are the program's on the second run too, so either layout goes with the tensors' sizes."""
    done = []

    def pass_(p, limit, fixed, reserve):
        lay = base(p, limit, fixed, reserve)
        if done:
            return lay
        done.append(True)
        return size_scratch(p, lay, lambda: planner.layout(p, limit, fixed, reserve), isa)
    return pass_
