"""Writing a planned Program as an ExecuTorch program (ET12): one execution plan per method
(``Program.methods``: "forward", or a model file's methods, docs/methods.md) with one chain each, arena
tensors in memory 1 (``non_const_buffer_sizes = [0, arena]``) and constants in one 128-byte-aligned segment
after the flatbuffer shared by every plan (each distinct constant once), each constant 16-byte aligned, so the
device reads weights in place from flash."""
from __future__ import annotations

import hashlib
import math
import struct

import flatbuffers
import numpy as np

from mcu_gen.program.ir import DTYPE_CODES, Program, ScalarValue, TensorValue
from mcu_gen.program.pte_format import (
    IDENTIFIER, HEADER_MAGIC, HEADER_LENGTH, SEGMENT_ALIGNMENT, TENSOR_ALIGNMENT, K_NULL, K_INT, K_BOOL,
    K_DOUBLE, K_TENSOR, K_STRING, K_INT_LIST, K_DOUBLE_LIST, K_BOOL_LIST, K_TENSOR_LIST,
    K_OPT_TENSOR_LIST, I_KERNEL_CALL, I_DELEGATE_CALL, LOC_EXTERNAL, LOC_SEGMENT, DELEGATE_PREFIX, PteError, align)
def _store_once(seg: bytearray, offsets: list, stored: dict, key, raw: bytes) -> int:
    """The index of `raw` in a segment (`seg`, its `offsets`): appended, aligned, the first time its
    `key` is seen, the earlier index after that (`stored`: key -> index)."""
    if key not in stored:
        seg.extend(b"\0" * (align(len(seg), TENSOR_ALIGNMENT) - len(seg)))
        stored[key] = len(offsets)
        offsets.append(len(seg))
        seg.extend(raw)
    return stored[key]


class _Writer:
    def __init__(self, program: Program, external: dict | None = None):
        self.p = program
        self.b = flatbuffers.Builder(4096)
        self.extra_values = []  # (kind, payload) appended after the IR's values
        # Constants whose data the firmware holds instead (id of the TensorValue -> its key; see write()).
        self.external = {id(program.values[i]): key for i, key in (external or {}).items()}

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
            elif kind == "f64":  # -0.0 equals the default 0.0: written anyway (no default), or it reads back as +0.0
                b.PrependFloat64Slot(slot, value, None if value == 0.0 and math.copysign(1.0, value) < 0 else 0.0)
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
            if v.is_constant and id(v) in self.external:  # ExecuTorch's external constant: no data, no place
                info = self.table(5, [(1, "off", self.b.CreateString(self.external[id(v)])), (2, "i8", LOC_EXTERNAL)])
                fields.append((9, "off", info))
            elif v.is_constant:
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
                if isinstance(v, TensorValue) and v.is_constant and id(v) not in self.external:
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
            start = align(self._seg_end, SEGMENT_ALIGNMENT)
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
            base, dot, overload = name.rpartition(".")
            if not dot:  # an in-place op without overload name (aten::copy_, aten::index_put_)
                base, overload = name, ""
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
            start = align(seg_end, SEGMENT_ALIGNMENT)
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
        seg_base = align(program_size, SEGMENT_ALIGNMENT)
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


def write(program: Program, external: dict | None = None) -> bytes:
    """Serialize a planned Program to .pte bytes. ``external`` (value index -> key): constants written as
    ExecuTorch's external constants (Tensor.extra_tensor_info: location EXTERNAL, fully_qualified_name the
    key; no data in the program, no place in the arena): the program a firmware embeds whose generated layers
    hold those weights themselves (mcu_gen/backends/generated/external.py). Value numbering is unchanged."""
    for i in external or {}:
        v = program.values[i]
        if not (isinstance(v, TensorValue) and v.is_constant):
            raise PteError(f"value {i} is not a constant tensor: its data cannot be external")
    return _Writer(program, external).write()
