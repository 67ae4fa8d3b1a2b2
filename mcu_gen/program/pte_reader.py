"""Reading an ExecuTorch program (ET12) into a Program: ours, or one ExecuTorch exported."""
from __future__ import annotations

import hashlib
import struct

import numpy as np
from flatbuffers import number_types as N
from flatbuffers.table import Table

from mcu_gen.program.ir import CODE_DTYPES, Instruction, Program, ScalarValue, TensorValue
from mcu_gen.program.pte_format import (
    IDENTIFIER, HEADER_MAGIC, HEADER_LENGTH, K_NULL, K_INT, K_BOOL, K_DOUBLE, K_TENSOR, K_STRING,
    K_INT_LIST, K_DOUBLE_LIST, K_BOOL_LIST, K_TENSOR_LIST, K_OPT_TENSOR_LIST, I_KERNEL_CALL, LOC_EXTERNAL,
    I_DELEGATE_CALL, LOC_INLINE, LOC_SEGMENT, DELEGATE_PREFIX, PteError)
def _tab(buf, pos) -> Table:
    return Table(buf, pos)


def _field(t: Table, slot: int) -> int:
    return t.Offset(4 + 2 * slot)


def _scalar(t: Table, slot, flags, default=0):
    o = _field(t, slot)
    return t.Get(flags, o + t.Pos) if o else default


def _sub(t: Table, slot):
    o = _field(t, slot)
    return _tab(t.Bytes, t.Indirect(o + t.Pos)) if o else None


def _vec(t: Table, slot, flags, size):
    o = _field(t, slot)
    if not o:
        return []
    start = t.Vector(o)
    n = t.VectorLen(o)
    return [t.Get(flags, start + i * size) for i in range(n)]


def _vec_tables(t: Table, slot):
    o = _field(t, slot)
    if not o:
        return []
    start = t.Vector(o)
    n = t.VectorLen(o)
    return [_tab(t.Bytes, t.Indirect(start + 4 * i)) for i in range(n)]


def _string(t: Table, slot):
    o = _field(t, slot)
    return t.String(o + t.Pos).decode() if o else ""


class PteFile:
    """Header facts of a .pte, kept for inspect."""

    def __init__(self, data: bytes):
        if len(data) < 8 or data[4:8] != IDENTIFIER:
            raise PteError(f"not an ET12 program (identifier {data[4:8]!r})")
        self.data = data
        self.program_size = len(data)
        self.segment_base = len(data)
        self.segment_size = 0
        if len(data) >= 8 + HEADER_LENGTH and data[8:12] == HEADER_MAGIC:
            (hlen,) = struct.unpack_from("<I", data, 12)
            if hlen < 32:
                raise PteError("extended header too short")
            self.program_size, self.segment_base, self.segment_size = struct.unpack_from("<QQQ", data, 16)
            if self.segment_base + self.segment_size > len(data):
                raise PteError("segment data runs past the end of the file")


def runtime_features(data: bytes) -> dict:
    """What of the runtime's loader a .pte uses, for a firmware that keeps only that
    (mcu_gen/firmware/project.py): ``value_tags``, the set of KernelTypes tags of its values (every
    plan), and ``inline_constants``, whether it has constant buffers inline in the flatbuffer (the legacy
    layout; this writer always uses a segment), and ``operators``, the first plan's operator table in its
    stored order ("name.overload")."""
    buf = bytearray(data)
    root = _tab(buf, struct.unpack_from("<I", buf, 0)[0])
    plans = _vec_tables(root, 1)
    tags = {_scalar(ev, 0, N.Uint8Flags) for plan in plans for ev in _vec_tables(plan, 2)}
    inline = any(_vec(bt, 0, N.Uint8Flags, 1) for bt in _vec_tables(root, 2))
    ops = [f"{_string(o, 0)}.{_string(o, 1)}" if _string(o, 1) else _string(o, 0)
           for o in (_vec_tables(plans[0], 6) if plans else [])]
    return {"value_tags": tags, "inline_constants": inline, "operators": ops}


def read(data: bytes) -> Program:
    """Parse .pte bytes into an IR Program (constants copied out as numpy arrays)."""
    info = PteFile(data)
    buf = bytearray(data)
    try:
        root = _tab(buf, struct.unpack_from("<I", buf, 0)[0])
        plans = _vec_tables(root, 1)
        if not plans:
            raise PteError("program has no execution plan")
        segments = [(_scalar(s, 0, N.Uint64Flags), _scalar(s, 1, N.Uint64Flags)) for s in _vec_tables(root, 4)]
        cseg = _sub(root, 5)
        const_offsets, const_seg = [], None
        if cseg is not None:
            const_offsets = _vec(cseg, 1, N.Uint64Flags, 8)
            si = _scalar(cseg, 0, N.Uint32Flags)
            if const_offsets and si < len(segments):
                const_seg = segments[si]
        inline_buffers = [_vec(bt, 0, N.Uint8Flags, 1) for bt in _vec_tables(root, 2)]
        mutable = _vec_tables(root, 6)  # initial values of planned tensors (ExecuTorch's mutable buffers)
        state_offsets, state_seg = [], None
        if mutable:
            state_offsets = _vec(mutable[0], 1, N.Uint64Flags, 8)
            si = _scalar(mutable[0], 0, N.Uint32Flags)
            if si >= len(segments):
                raise PteError(f"mutable data in segment {si} of {len(segments)}")
            state_seg = segments[si]

        def read_plan(plan) -> Program:
            prog = Program(name=_string(plan, 0) or "forward")
            raw_values = _vec_tables(plan, 2)
            int_values = {}
            decoded = []
            for i, ev in enumerate(raw_values):
                tag = _scalar(ev, 0, N.Uint8Flags)
                val = _sub(ev, 1)
                decoded.append((tag, val))
                if tag == K_INT:
                    int_values[i] = _scalar(val, 0, N.Int64Flags)
            for i, (tag, val) in enumerate(decoded):
                if tag == K_TENSOR:
                    dtype_code = _scalar(val, 0, N.Int8Flags)
                    if dtype_code not in CODE_DTYPES:
                        raise PteError(f"value {i}: unsupported scalar type {dtype_code}")
                    shape = tuple(_vec(val, 2, N.Int32Flags, 4))
                    dim_order = tuple(_vec(val, 3, N.Uint8Flags, 1)) or None
                    t = TensorValue(shape, CODE_DTYPES[dtype_code], dim_order=dim_order, name=f"v{i}")
                    cidx = _scalar(val, 5, N.Uint32Flags)
                    alloc = _sub(val, 6)
                    extra = _sub(val, 9)
                    if extra is not None and _scalar(extra, 2, N.Int8Flags) == LOC_EXTERNAL:
                        raise PteError(f"value {i}: its data is external ({_string(extra, 1)!r}), not in the program: "
                                       f"a firmware's embedded copy of a program whose generated layers hold their "
                                       f"weights; read the build's model.pte instead")
                    raw = None
                    if cidx and alloc is not None:  # planned, with an initial value in the mutable data segment
                        if state_seg is None or cidx >= len(state_offsets):
                            raise PteError(f"value {i}: initial value {cidx} of a planned tensor is not in the program's "
                                           f"mutable data segment")
                        if state_offsets[cidx] + t.nbytes > state_seg[1]:
                            raise PteError(f"value {i}: initial value runs past its segment")
                        start = info.segment_base + state_seg[0] + state_offsets[cidx]
                        raw = np.frombuffer(data[start: start + t.nbytes], dtype=_np_dtype(t.dtype))
                        if raw.nbytes != t.nbytes:
                            raise PteError(f"value {i}: initial value truncated")
                        raw = raw.reshape(_stored_shape(t)).copy()
                    elif cidx:
                        if const_seg is not None:
                            if cidx >= len(const_offsets):
                                raise PteError(f"value {i}: constant index {cidx} out of range")
                            start = info.segment_base + const_seg[0] + const_offsets[cidx]
                            raw = data[start : start + t.nbytes]
                        else:
                            if cidx >= len(inline_buffers):
                                raise PteError(f"value {i}: constant buffer {cidx} out of range")
                            raw = bytes(inline_buffers[cidx])[: t.nbytes]
                        if len(raw) != t.nbytes:
                            raise PteError(f"value {i}: constant data truncated")
                        raw = np.frombuffer(raw, dtype=_np_dtype(t.dtype)).reshape(_stored_shape(t)).copy()
                    if alloc is not None:
                        lo = _scalar(alloc, 1, N.Uint32Flags)
                        hi = _scalar(alloc, 2, N.Uint32Flags)
                        t.offset = lo | (hi << 32)
                        t.mem_id = _scalar(alloc, 0, N.Uint32Flags)
                        if raw is not None:  # planned with an initial value: a state tensor (mutable buffer)
                            t.init = raw
                            prog.states.append(i)
                            prog.state_names.append(t.name)
                    elif raw is not None:
                        t.data = raw
                    prog.values.append(t)
                elif tag == K_NULL or tag == 0:
                    prog.values.append(ScalarValue("none"))
                elif tag == K_INT:
                    prog.values.append(ScalarValue("int", int_values[i]))
                elif tag == K_BOOL:
                    prog.values.append(ScalarValue("bool", bool(_scalar(val, 0, N.BoolFlags, False))))
                elif tag == K_DOUBLE:
                    prog.values.append(ScalarValue("float", _scalar(val, 0, N.Float64Flags, 0.0)))
                elif tag == K_STRING:
                    prog.values.append(ScalarValue("string", _string(val, 0)))
                elif tag == K_INT_LIST:
                    items = _vec(val, 0, N.Int64Flags, 8)
                    try:
                        prog.values.append(ScalarValue("int_list", [int_values[j] for j in items]))
                    except KeyError as e:
                        raise PteError(f"value {i}: int list refers to a non-int value {e}") from None
                elif tag == K_DOUBLE_LIST:
                    prog.values.append(ScalarValue("float_list", _vec(val, 0, N.Float64Flags, 8)))
                elif tag == K_BOOL_LIST:
                    prog.values.append(ScalarValue("bool_list", [bool(x) for x in _vec(val, 0, N.BoolFlags, 1)]))
                elif tag == K_TENSOR_LIST:
                    prog.values.append(ScalarValue("tensor_list", _vec(val, 0, N.Int32Flags, 4)))
                elif tag == K_OPT_TENSOR_LIST:
                    prog.values.append(ScalarValue("optional_tensor_list", _vec(val, 0, N.Int32Flags, 4)))
                else:
                    raise PteError(f"value {i}: unknown value type {tag}")
            prog.inputs = _vec(plan, 3, N.Int32Flags, 4)
            prog.outputs = _vec(plan, 4, N.Int32Flags, 4)
            sizes = _vec(plan, 8, N.Int64Flags, 8)
            prog.arena_size = int(sizes[1]) if len(sizes) > 1 else 0
            # Planned buffers 2, 3, ...: the program spans several RAM regions (trailing empty ones dropped).
            extra = [int(x) for x in sizes[2:]]
            while extra and extra[-1] == 0:
                extra.pop()
            prog.extra_arenas = extra
            for i, v in enumerate(prog.values):
                if isinstance(v, TensorValue) and not v.is_constant and v.offset is not None:
                    if not 1 <= v.mem_id < len(sizes):
                        raise PteError(f"value {i}: memory id {v.mem_id}, the program plans buffers 1..{len(sizes) - 1}")
            ops = [f"{_string(o, 0)}.{_string(o, 1)}" if _string(o, 1) else _string(o, 0) for o in _vec_tables(plan, 6)]
            delegates = []
            for d in _vec_tables(plan, 7):
                ref = _sub(d, 1)
                loc = _scalar(ref, 0, N.Int8Flags) if ref is not None else LOC_INLINE
                idx = _scalar(ref, 1, N.Uint32Flags) if ref is not None else 0
                if loc == LOC_SEGMENT:
                    if idx >= len(segments):
                        raise PteError(f"delegate data in segment {idx} of {len(segments)}")
                    off, size = segments[idx]
                    start = info.segment_base + off
                    if start + size > len(data):
                        raise PteError("delegate data runs past the end of the file")
                    processed = bytes(data[start: start + size])
                else:
                    inline = _vec_tables(root, 3)
                    if idx >= len(inline):
                        raise PteError(f"delegate data {idx} of {len(inline)} inline buffers")
                    processed = bytes(_vec(inline[idx], 0, N.Uint8Flags, 1))
                specs = [(_string(c, 0), bytes(_vec(c, 1, N.Uint8Flags, 1))) for c in _vec_tables(d, 2)]
                delegates.append({"id": _string(d, 0), "processed": processed, "compile_specs": specs})
            if delegates:
                prog.meta["delegates"] = delegates
            chains = _vec_tables(plan, 5)
            for chain in chains[:1]:
                for ins in _vec_tables(chain, 2):
                    tag = _scalar(ins, 0, N.Uint8Flags)
                    if tag == I_DELEGATE_CALL:
                        dc = _sub(ins, 1)
                        di = _scalar(dc, 0, N.Int32Flags)
                        if not 0 <= di < len(delegates):
                            raise PteError(f"instruction refers to delegate {di} of {len(delegates)}")
                        prog.instructions.append(Instruction(f"{DELEGATE_PREFIX}{di}", _vec(dc, 1, N.Int32Flags, 4)))
                        continue
                    if tag != I_KERNEL_CALL:
                        raise PteError(f"instruction type {tag} is not supported (only kernel and delegate calls)")
                    kc = _sub(ins, 1)
                    oi = _scalar(kc, 0, N.Int32Flags)
                    if not 0 <= oi < len(ops):
                        raise PteError(f"instruction refers to operator {oi} of {len(ops)}")
                    prog.instructions.append(Instruction(ops[oi], _vec(kc, 1, N.Int32Flags, 4)))
            if len(chains) > 1:
                raise PteError("programs with more than one chain are not supported")
            return prog

        methods = [read_plan(plan) for plan in plans]
        names = [m.name for m in methods]
        if len(set(names)) != len(names):
            raise PteError(f"two execution plans have the same method name: {names}")
        prog = methods[0]
        prog.more_methods = methods[1:]
    except PteError:
        raise
    except Exception as e:  # malformed flatbuffer: offsets out of range and such
        raise PteError(f"malformed program: {type(e).__name__}: {e}") from None
    digest = hashlib.sha256(bytes(data)).hexdigest()
    for m in prog.methods:
        m.meta["pte_bytes"] = len(data)
        m.meta["read_from"] = digest  # see device_indices
        m.meta["flatbuffer_bytes"] = info.program_size
        m.meta["segment_bytes"] = info.segment_size
    return prog


def _np_dtype(dtype: str):
    return {"bool": np.bool_}.get(dtype, np.dtype(dtype))


def _stored_shape(t: TensorValue):
    # Constants are stored in their dim order; reshape to the logical shape only
    # when contiguous.
    if list(t.dim_order) == list(range(len(t.shape))):
        return t.shape
    return tuple(t.shape[d] for d in t.dim_order)
