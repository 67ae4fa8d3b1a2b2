"""Reading and writing programs in ExecuTorch's PTE format (ET12).

The schema is docs/schema/program.fbs; slot numbers below follow its field
order. The writer emits one execution plan per method (``Program.methods``:
"forward", or a model file's methods, docs/methods.md) with one chain each, arena
tensors in memory 1 (``non_const_buffer_sizes = [0, arena]``) and constants in
one 128-byte-aligned segment after the flatbuffer shared by every plan (each
distinct constant once), each constant 16-byte aligned, so the device reads
weights in place from flash.
"""
from __future__ import annotations

import hashlib
import struct

import flatbuffers
import numpy as np
from flatbuffers import number_types as N
from flatbuffers.table import Table

from mcu_gen.program.ir import CODE_DTYPES, DTYPE_CODES, Instruction, Program, ScalarValue, TensorValue
from mcu_gen.errors import McuGenError

IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"
HEADER_LENGTH = 32
SEGMENT_ALIGNMENT = 128
TENSOR_ALIGNMENT = 16

# KernelTypes union tags.
K_NULL, K_INT, K_BOOL, K_DOUBLE, K_TENSOR, K_STRING = 1, 2, 3, 4, 5, 6
K_INT_LIST, K_DOUBLE_LIST, K_BOOL_LIST, K_TENSOR_LIST, K_OPT_TENSOR_LIST = 7, 8, 9, 10, 11
# InstructionArguments union tags.
I_KERNEL_CALL = 1
I_DELEGATE_CALL = 2
# DataLocation of a delegate's processed data.
LOC_INLINE, LOC_SEGMENT = 0, 1
# IR instructions calling delegate k of program.meta["delegates"] are named "delegate:k"
# (mcu_gen/backends/ethosu/delegate.py); each delegate is a dict with id, processed (bytes), compile_specs.
DELEGATE_PREFIX = "delegate:"


class PteError(McuGenError, ValueError):
    """A file that is not a valid ET12 program (or uses what mcu-gen can't read)."""


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


# --------------------------------------------------------------------------- writer
def _store_once(seg: bytearray, offsets: list, stored: dict, key, raw: bytes) -> int:
    """The index of `raw` in a segment (`seg`, its `offsets`): appended, aligned, the first time its
    `key` is seen, the earlier index after that (`stored`: key -> index)."""
    if key not in stored:
        seg.extend(b"\0" * (_align(len(seg), TENSOR_ALIGNMENT) - len(seg)))
        stored[key] = len(offsets)
        offsets.append(len(seg))
        seg.extend(raw)
    return stored[key]


class _Writer:
    def __init__(self, program: Program):
        self.p = program
        self.b = flatbuffers.Builder(4096)
        self.extra_values = []  # (kind, payload) appended after the IR's values

    # helpers
    def shared_vec(self, kind, items):
        """A vector written once per distinct content (tensor sizes and dim orders repeat a lot)."""
        key = (kind, tuple(int(x) for x in items))
        if key not in self._vec_cache:
            self._vec_cache[key] = self.vec_i32(items) if kind == "i32" else self.vec_u8(items)
        return self._vec_cache[key]

    def shared_string(self, text: str):
        """A string written once per distinct text (every operator's overload is "out")."""
        key = ("str", text)
        if key not in self._vec_cache:
            self._vec_cache[key] = self.b.CreateString(text)
        return self._vec_cache[key]

    def vec_i32(self, items):
        b = self.b
        b.StartVector(4, len(items), 4)
        for x in reversed(items):
            b.PrependInt32(int(x))
        return b.EndVector()

    def vec_i64(self, items):
        b = self.b
        b.StartVector(8, len(items), 8)
        for x in reversed(items):
            b.PrependInt64(int(x))
        return b.EndVector()

    def vec_u64(self, items):
        b = self.b
        b.StartVector(8, len(items), 8)
        for x in reversed(items):
            b.PrependUint64(int(x))
        return b.EndVector()

    def vec_u8(self, items):
        b = self.b
        b.StartVector(1, len(items), 1)
        for x in reversed(items):
            b.PrependUint8(int(x))
        return b.EndVector()

    def vec_f64(self, items):
        b = self.b
        b.StartVector(8, len(items), 8)
        for x in reversed(items):
            b.PrependFloat64(float(x))
        return b.EndVector()

    def vec_bool(self, items):
        b = self.b
        b.StartVector(1, len(items), 1)
        for x in reversed(items):
            b.PrependBool(bool(x))
        return b.EndVector()

    def vec_offsets(self, offs):
        b = self.b
        b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    def table(self, nslots, fields):
        """fields: list of (slot, kind, value); kinds: off, u8, i8, bool, i32, u32, i64, u64, f64."""
        b = self.b
        b.StartObject(nslots)
        for slot, kind, value in fields:
            if kind == "off":
                b.PrependUOffsetTRelativeSlot(slot, value, 0)
            elif kind == "u8":
                b.PrependUint8Slot(slot, value, 0)
            elif kind == "i8":
                b.PrependInt8Slot(slot, value, 0)
            elif kind == "bool":
                b.PrependBoolSlot(slot, value, False)
            elif kind == "i32":
                b.PrependInt32Slot(slot, value, 0)
            elif kind == "u32":
                b.PrependUint32Slot(slot, value, 0)
            elif kind == "i64":
                b.PrependInt64Slot(slot, value, 0)
            elif kind == "u64":
                b.PrependUint64Slot(slot, value, 0)
            elif kind == "f64":
                b.PrependFloat64Slot(slot, value, 0.0)
            else:  # pragma: no cover
                raise AssertionError(kind)
        return b.EndObject()

    # values
    def int_value_index(self, x: int) -> int:
        """Index of an Int EValue holding x (IntList items refer to values)."""
        key = ("int", int(x))
        if key not in self._int_cache:
            self._int_cache[key] = len(self.values) + len(self.extra_values)
            self.extra_values.append(ScalarValue("int", int(x)))
        return self._int_cache[key]

    def evalue(self, v, const_index):
        if isinstance(v, TensorValue):
            fields = [
                (0, "i8", DTYPE_CODES[v.dtype]),
                (2, "off", self.shared_vec("i32", v.shape)),
                (3, "off", self.shared_vec("u8", v.dim_order)),
            ]
            if v.is_constant:
                fields.append((5, "u32", const_index))
            else:
                if v.init is not None:  # a state tensor: planned, with its initial value (ExecuTorch's layout)
                    fields.append((5, "u32", const_index))
                if v.offset is None:
                    raise PteError(f"tensor '{v.name}' has no arena offset (plan the program first)")
                key = ("alloc", v.mem_id, v.offset)
                if key not in self._vec_cache:
                    self._vec_cache[key] = self.table(
                        3, [(0, "u32", v.mem_id), (1, "u32", v.offset & 0xFFFFFFFF), (2, "u32", v.offset >> 32)])
                fields.append((6, "off", self._vec_cache[key]))
            # Offsets must be created before StartObject: build children first.
            t = self.table(10, fields)
            return K_TENSOR, t
        k, x = v.kind, v.value
        if k == "none":
            return K_NULL, self.table(0, [])
        if k == "int":
            return K_INT, self.table(1, [(0, "i64", int(x))])
        if k == "bool":
            return K_BOOL, self.table(1, [(0, "bool", bool(x))])
        if k == "float":
            return K_DOUBLE, self.table(1, [(0, "f64", float(x))])
        if k == "string":
            s = self.b.CreateString(str(x))
            return K_STRING, self.table(1, [(0, "off", s)])
        if k == "int_list":
            items = [self.int_value_index(i) for i in x]
            return K_INT_LIST, self.table(1, [(0, "off", self.vec_i64(items))])
        if k == "float_list":
            return K_DOUBLE_LIST, self.table(1, [(0, "off", self.vec_f64(x))])
        if k == "bool_list":
            return K_BOOL_LIST, self.table(1, [(0, "off", self.vec_bool(x))])
        if k == "tensor_list":
            return K_TENSOR_LIST, self.table(1, [(0, "off", self.vec_i32(x))])
        if k == "optional_tensor_list":
            return K_OPT_TENSOR_LIST, self.table(1, [(0, "off", self.vec_i32(x))])
        raise PteError(f"cannot serialize scalar kind {k!r}")

    def compact(self):
        """The values the program refers to, each distinct scalar once: (values, old -> new index).
        ExecuTorch's emitter writes one value per argument; sharing them keeps the
        program metadata (which lives in flash) small."""
        p = self.p
        used = set(p.inputs) | set(p.outputs) | set(p.states)
        for ins in p.instructions:
            used.update(ins.args)
        for i in list(used):
            v = p.values[i]
            if isinstance(v, ScalarValue) and v.kind in ("tensor_list", "optional_tensor_list"):
                used.update(j for j in v.value if j is not None and j >= 0)
        values, remap, seen = [], {}, {}
        for i, v in enumerate(p.values):
            if i not in used:
                continue
            key = ("v", i)
            if isinstance(v, ScalarValue) and v.kind not in ("tensor_list", "optional_tensor_list"):
                val = tuple(v.value) if isinstance(v.value, (list, tuple)) else v.value
                key = (v.kind, repr(val))
            if key not in seen:
                seen[key] = len(values)
                values.append(v)
                if isinstance(v, ScalarValue) and v.kind == "int":
                    self._int_cache[("int", int(v.value))] = seen[key]
            remap[i] = seen[key]
        for k, v in enumerate(values):
            if isinstance(v, ScalarValue) and v.kind in ("tensor_list", "optional_tensor_list"):
                values[k] = ScalarValue(v.kind, [remap[j] if j is not None and j >= 0 else -1 for j in v.value])
        return values, remap

    def _segments(self, methods):
        """The constant segment and the mutable data segment (initial values of state tensors) of
        every method: each distinct constant once (methods share their weights; equal bytes of the
        same dtype are stored once), each distinct initial value once. Index 0 of both is reserved
        (no data), as in ExecuTorch. Returns per method {value index -> constant / state index}."""
        const_key, state_key = {}, {}
        seg, offsets = bytearray(), [0]
        state_seg, state_offsets = bytearray(), [0]
        per_method = []
        for m, values in methods:
            const_index, state_index = {}, {}
            for i, v in enumerate(values):  # initial values first, then constants (the order ExecuTorch writes)
                if isinstance(v, TensorValue) and not v.is_constant and v.init is not None:
                    arr = np.asarray(v.init, order="C")
                    if arr.nbytes != v.nbytes:
                        raise PteError(f"state '{v.name}' has {arr.nbytes} bytes of initial value, its shape needs {v.nbytes}")
                    raw = arr.tobytes()  # only the initial bytes: equal ones are stored once
                    state_index[i] = _store_once(state_seg, state_offsets, state_key,
                                                 (hashlib.sha256(raw).digest(), len(raw)), raw)
            for i, v in enumerate(values):
                if isinstance(v, TensorValue) and v.is_constant:
                    arr = np.asarray(v.data, order="C")
                    if arr.nbytes != v.nbytes:
                        raise PteError(f"constant '{v.name}' holds {arr.nbytes} bytes, its shape needs {v.nbytes}")
                    raw = arr.tobytes()
                    const_index[i] = _store_once(seg, offsets, const_key,
                                                 (v.dtype, hashlib.sha256(raw).digest(), len(raw)), raw)
            per_method.append((const_index, state_index))
        return seg, offsets, state_seg, state_offsets, per_method

    def _delegates(self, m) -> list:
        """Method ``m``'s BackendDelegates; their processed data go in segments after the constant
        segment, 128-byte aligned (self._delegate_segs)."""
        b = self.b
        delegate_offs = []
        for k, d in enumerate(m.meta.get("delegates", [])):
            start = _align(self._seg_end, SEGMENT_ALIGNMENT)
            self._delegate_segs.append((start, bytes(d["processed"])))
            self._seg_end = start + len(d["processed"])
            specs = []
            for key, value in d.get("compile_specs", []):
                ko = b.CreateString(key)
                vo = self.vec_u8(bytes(value))
                specs.append(self.table(2, [(0, "off", ko), (1, "off", vo)]))
            specs_vec = self.vec_offsets(specs)
            ref = self.table(2, [(0, "i8", LOC_SEGMENT), (1, "u32", 1 + k)])
            did = b.CreateString(d["id"])
            delegate_offs.append(self.table(3, [(0, "off", did), (1, "off", ref), (2, "off", specs_vec)]))
        return delegate_offs

    def _plan(self, m, values, int_cache, const_index, state_index):
        """One ExecutionPlan table: method ``m`` with its compacted ``values``."""
        b = self.b
        self.p, self.values, self._int_cache, self.extra_values = m, values, int_cache, []
        remap = self._remap
        # EValues: the IR's, then the Int values that IntLists refer to.
        evalues = []
        for i, v in enumerate(self.values):
            evalues.append(self.evalue(v, const_index.get(i, state_index.get(i, 0))))
        k = 0
        while k < len(self.extra_values):
            evalues.append(self.evalue(self.extra_values[k], 0))
            k += 1
        ev_offs = [self.table(2, [(0, "u8", tag), (1, "off", off)]) for tag, off in evalues]
        values_vec = self.vec_offsets(ev_offs)
        # Operators and instructions (delegate calls are not operators).
        ops = [op for op in m.operators if not op.startswith(DELEGATE_PREFIX)]
        op_index = {name: i for i, name in enumerate(ops)}
        op_offs = []
        for name in ops:
            base, _, overload = name.rpartition(".")
            n = self.shared_string(base)
            o = self.shared_string(overload)
            op_offs.append(self.table(2, [(0, "off", n), (1, "off", o)]))
        ops_vec = self.vec_offsets(op_offs)
        ins_offs = []
        for ins in m.instructions:
            args = self.vec_i32([remap[a] for a in ins.args])
            if ins.op.startswith(DELEGATE_PREFIX):
                dc = self.table(2, [(0, "i32", int(ins.op[len(DELEGATE_PREFIX):])), (1, "off", args)])
                ins_offs.append(self.table(2, [(0, "u8", I_DELEGATE_CALL), (1, "off", dc)]))
                continue
            kc = self.table(2, [(0, "i32", op_index[ins.op]), (1, "off", args)])
            ins_offs.append(self.table(2, [(0, "u8", I_KERNEL_CALL), (1, "off", kc)]))
        ins_vec = self.vec_offsets(ins_offs)
        inputs = [remap[i] for i in m.inputs]
        outputs = [remap[i] for i in m.outputs]
        # The chain and the plan list the same inputs and outputs: one vector each.
        inputs_vec, outputs_vec = self.shared_vec("i32", inputs), self.shared_vec("i32", outputs)
        chain = self.table(4, [(0, "off", inputs_vec), (1, "off", outputs_vec), (2, "off", ins_vec)])
        chains = self.vec_offsets([chain])
        delegate_offs = self._delegates(m)
        name = b.CreateString(m.name)
        return self.table(
            10,
            [
                (0, "off", name),
                (2, "off", values_vec),
                (3, "off", inputs_vec),
                (4, "off", outputs_vec),
                (5, "off", chains),
                (6, "off", ops_vec),
                (7, "off", self.vec_offsets(delegate_offs)),
                (8, "off", self.vec_i64([0, *m.arena_sizes])),
            ],
        )

    def write(self) -> bytes:
        root_program, b = self.p, self.b
        methods = root_program.methods
        names = [m.name for m in methods]
        if len(set(names)) != len(names) or not all(names):
            raise PteError(f"method names must be distinct and not empty: {names}")
        if len(methods) > 1 and any(m.meta.get("delegates") for m in methods):
            raise PteError("delegates (--npu) in a program with several methods are not supported")
        self._vec_cache = {}
        compacted = []
        for m in methods:
            self.p, self._int_cache = m, {}
            values, remap = self.compact()
            compacted.append((m, values, remap, self._int_cache))
        seg, offsets, state_seg, state_offsets, per_method = self._segments([(m, v) for m, v, _, _ in compacted])
        self._seg_end, self._delegate_segs = len(seg), []
        plan_offs = []
        for (m, values, remap, int_cache), (const_index, state_index) in zip(compacted, per_method):
            self._remap = remap
            plan_offs.append(self._plan(m, values, int_cache, const_index, state_index))
        self.p = root_program
        plans = self.vec_offsets(plan_offs)
        seg_end, delegate_segs = self._seg_end, self._delegate_segs
        mutable = None
        if len(state_offsets) > 1:  # after the constants and the delegates
            start = _align(seg_end, SEGMENT_ALIGNMENT)
            delegate_segs.append((start, bytes(state_seg)))
            seg_end = start + len(state_seg)
            mutable = self.vec_offsets([self.table(2, [(0, "u32", len(delegate_segs)),
                                                       (1, "off", self.vec_u64(state_offsets))])])
        seg_tables = [self.table(2, [(0, "u64", 0), (1, "u64", len(seg))])]
        seg_tables += [self.table(2, [(0, "u64", start), (1, "u64", len(data))]) for start, data in delegate_segs]
        segments = self.vec_offsets(seg_tables)
        for start, data in delegate_segs:
            seg.extend(b"\0" * (start - len(seg)))
            seg.extend(data)
        const_seg = self.table(2, [(0, "u32", 0), (1, "off", self.vec_u64(offsets))])
        root = self.table(
            8,
            [
                (0, "u32", 0),
                (1, "off", plans),
                (2, "off", self.vec_offsets([])),
                (4, "off", segments),
                (5, "off", const_seg),
            ] + ([(6, "off", mutable)] if mutable is not None else []),
        )
        b.Finish(root, file_identifier=IDENTIFIER)
        fb = bytes(b.Output())
        program_size = len(fb) + HEADER_LENGTH
        seg_base = _align(program_size, SEGMENT_ALIGNMENT)
        header = (
            HEADER_MAGIC
            + struct.pack("<I", HEADER_LENGTH)
            + struct.pack("<QQQ", program_size, seg_base, len(seg))
        )
        root_off = struct.unpack_from("<I", fb, 0)[0] + HEADER_LENGTH
        out = struct.pack("<I", root_off) + fb[4:8] + header + fb[8:]
        out += b"\0" * (seg_base - len(out))
        out += bytes(seg)
        return out


def value_remap(program: Program) -> dict:
    """IR value index -> value index in the written .pte (the writer shares and drops values);
    what a device that runs the written program calls each value."""
    w = _Writer(program)
    w._int_cache = {}
    return w.compact()[1]


def device_indices(program: Program, data: bytes) -> dict:
    """IR value index -> value index in `data`, the program a device runs: the identity when
    `program` was read from exactly these bytes (pte.read, not re-written since), else the
    writer's numbering (value_remap)."""
    if program.meta.get("read_from") == hashlib.sha256(bytes(data)).hexdigest():
        return {i: i for i in range(len(program.values))}
    return value_remap(program)


def write(program: Program) -> bytes:
    """Serialize a planned Program to .pte bytes."""
    return _Writer(program).write()


# --------------------------------------------------------------------------- reader
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
    layout; this writer always uses a segment)."""
    buf = bytearray(data)
    root = _tab(buf, struct.unpack_from("<I", buf, 0)[0])
    tags = {_scalar(ev, 0, N.Uint8Flags) for plan in _vec_tables(root, 1) for ev in _vec_tables(plan, 2)}
    inline = any(_vec(bt, 0, N.Uint8Flags, 1) for bt in _vec_tables(root, 2))
    return {"value_tags": tags, "inline_constants": inline}


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
