"""Copies the memory planner removes before it places anything.

- No-op copies: a pad whose pads are all zero (``aten::constant_pad_nd.out``) and
  a permute/transpose that does not change the order of the bytes in memory
  (``aten::permute_copy.out``, ``cortex_m::transpose.out``: the identity, or a
  permutation that only moves dims of size 1). The instruction disappears and
  its out becomes a view of its input (``program.meta["aliases"]``).
- Concatenation into slices: ``aten::cat.out`` along a dim where every input is
  one contiguous block of the output (contiguous tensors, all dims before the
  cat dim of size 1, e.g. channels of an NCHW tensor with batch 1). Each input's
  producer writes straight into its slice of the output and the cat instruction
  disappears: ``program.meta["slices"] = {input: (output, byte displacement)}``.
  Only inputs written by an instruction of the program (not graph inputs,
  constants or views), used once in the cat, not graph outputs and not already a
  slice of another output qualify; a cat is sliced whole or not at all.

The planner (mcu_gen/plan/planner.py) honours both: a view or slice lives at its
target's offset plus its displacement, and its lifetime is part of the target's.
"""
from __future__ import annotations

from typing import Optional

from mcu_gen.program.ir import DTYPE_SIZES, Instruction, Program, ScalarValue, TensorValue

NOOP_OPS = ("aten::constant_pad_nd.out", "aten::permute_copy.out", "cortex_m::transpose.out")
CAT_OP = "aten::cat.out"


def _contiguous(t: TensorValue) -> bool:
    return t.dim_order == tuple(range(len(t.shape)))


def _activation(program: Program, v: int) -> Optional[TensorValue]:
    t = program.values[v] if 0 <= v < len(program.values) else None
    return t if isinstance(t, TensorValue) and not t.is_constant else None


def _scalar(program: Program, v: int):
    s = program.values[v]
    return s.value if isinstance(s, ScalarValue) else None


def keeps_memory_order(shape, perm) -> bool:
    """True when permuting ``shape`` by ``perm`` leaves every element at the same
    index of a contiguous buffer: the dims of size > 1 keep their relative order."""
    perm = [p % len(shape) for p in perm] if shape else []
    if sorted(perm) != list(range(len(shape))):
        return False
    moved = [d for d in perm if shape[d] != 1]
    return moved == sorted(moved)


def noop_copy(program: Program, ins: Instruction) -> Optional[tuple]:
    """(input, out) of an instruction that copies its input unchanged, else None."""
    if ins.op not in NOOP_OPS:
        return None
    if ins.op == "aten::constant_pad_nd.out":  # (self, pad, value, out, out)
        if len(ins.args) != 5:
            return None
        src, out = ins.args[0], ins.args[3]
        pads = _scalar(program, ins.args[1])
        if not isinstance(pads, list) or any(int(p) != 0 for p in pads):
            return None
    else:  # (self, dims, out, out)
        if len(ins.args) != 4:
            return None
        src, out = ins.args[0], ins.args[2]
        perm = _scalar(program, ins.args[1])
        t = _activation(program, src)
        if not isinstance(perm, list) or t is None or not keeps_memory_order(t.shape, perm):
            return None
    a, b = _activation(program, src), _activation(program, out)
    if a is None or b is None or a.dtype != b.dtype or a.numel != b.numel:
        return None
    if not (_contiguous(a) and _contiguous(b)):
        return None
    if ins.op == "aten::constant_pad_nd.out" and a.shape != b.shape:
        return None
    return src, out


def _root(aliases: dict, v: int) -> int:
    seen = set()
    while v in aliases and v not in seen:
        seen.add(v)
        v = aliases[v]
    return v


def remove_noop_copies(program: Program) -> list:
    """Drop no-op pads and permutes (their outs become views of their inputs).
    Returns the ops removed, in program order."""
    aliases = program.meta.setdefault("aliases", {})
    slices = program.meta.get("slices", {})
    kept, removed = [], []
    to_output = set()  # the outputs and what they view (pixel_shuffle(x, 1): output = view(permute(view(x))))
    for a in program.outputs:
        while a not in to_output:
            to_output.add(a)
            a = aliases.get(a, a)
    for ins in program.instructions:
        pair = noop_copy(program, ins)
        if pair is not None:
            src, out = pair
            root = _root(aliases, src)
            ok = (
                out not in aliases and out not in slices and out not in program.inputs
                and out not in program.states and root not in program.states  # a state keeps its own bytes
                and _activation(program, root) is not None
                # a graph output keeps bytes of its own, apart from the graph inputs
                and not (out in to_output and root in program.inputs)
            )
            if ok:
                aliases[out] = src
                removed.append(ins.op)
                continue
        kept.append(ins)
    program.instructions[:] = kept
    return removed


def cat_slices(program: Program, ins: Instruction) -> Optional[dict]:
    """{input: (out, byte displacement)} if this concatenation can be done by its
    producers writing into slices of its output, else None."""
    if ins.op != CAT_OP or len(ins.args) != 4:
        return None
    items, dim, out_v = _scalar(program, ins.args[0]), _scalar(program, ins.args[1]), ins.args[2]
    out = _activation(program, out_v)
    if not isinstance(items, list) or not items or not isinstance(dim, int) or out is None:
        return None
    if out_v in program.states:  # producers would write the state while others still read its old value
        return None
    rank = len(out.shape)
    if rank == 0 or not -rank <= dim < rank or not _contiguous(out):
        return None
    dim %= rank
    if any(out.shape[d] != 1 for d in range(dim)):
        return None
    if len(set(items)) != len(items):
        return None
    aliases = program.meta.get("aliases", {})
    slices = program.meta.get("slices", {})
    output_roots = {_root(aliases, o) for o in program.outputs}
    result, disp = {}, 0
    for v in items:
        t = _activation(program, v)
        if t is None or t.dtype != out.dtype or len(t.shape) != rank or not _contiguous(t):
            return None
        if any(t.shape[d] != out.shape[d] for d in range(rank) if d != dim):
            return None
        if v in program.inputs or v in program.states or v in aliases or v in slices or v in output_roots or v == out_v:
            return None
        result[v] = (out_v, disp)
        disp += t.numel * DTYPE_SIZES[t.dtype]
    if disp != out.nbytes:
        return None
    return result


def slice_concatenations(program: Program) -> int:
    """Turn every qualifying concatenation into slices of its output (removing it).
    Returns how many were removed."""
    slices = program.meta.setdefault("slices", {})
    kept, n = [], 0
    for ins in program.instructions:
        found = cat_slices(program, ins)
        if found is None:
            kept.append(ins)
            continue
        slices.update(found)
        n += 1
    program.instructions[:] = kept
    return n
