"""Crafted programs that each break one rule of the loader's contract (docs/loader.md).

Used by the tests (tests/test_loader_contract.py on the native runner under ASan/UBSan,
tests/test_bad_program.py on QEMU, tests/test_fuzz.py as regression inputs): every
program here is generated from the IR and patched in place, so no binary is kept in
the repository. `Pte` is a small read/patch view of an ET12 file that follows the
same offsets the runtime follows (docs/schema/program.fbs slot numbers).
"""
from __future__ import annotations

import struct

import numpy as np

from mcu_gen.program import pte
from mcu_gen.program.ir import Instruction, Program, ScalarValue, TensorValue


class Pte:
    """An ET12 file as a bytearray, with the few navigations the crafted programs need."""

    def __init__(self, data: bytes):
        self.d = bytearray(data)

    def bytes(self) -> bytes:
        return bytes(self.d)

    def u16(self, p):
        return struct.unpack_from("<H", self.d, p)[0]

    def u32(self, p):
        return struct.unpack_from("<I", self.d, p)[0]

    def i32(self, p):
        return struct.unpack_from("<i", self.d, p)[0]

    def put(self, p, fmt, value):
        struct.pack_into(fmt, self.d, p, value)

    def field_pos(self, t, slot):
        """Where field `slot` of the table at `t` is stored (None when absent)."""
        vt = t - self.i32(t)
        at = 4 + 2 * slot
        if at >= self.u16(vt) or self.u16(vt + at) == 0:
            return None
        return t + self.u16(vt + at)

    def ref(self, t, slot):
        p = self.field_pos(t, slot)
        return None if p is None else p + self.u32(p)

    def point(self, t, slot, target):
        """Makes the uoffset field `slot` of table `t` refer to byte `target`."""
        p = self.field_pos(t, slot)
        self.put(p, "<I", target - p)

    def vec_table(self, v, i):
        p = v + 4 + 4 * i
        return p + self.u32(p)

    @property
    def root(self):
        return self.u32(0)

    @property
    def plan(self):
        return self.vec_table(self.ref(self.root, 1), 0)

    def evalue(self, i):
        return self.vec_table(self.ref(self.plan, 2), i)

    def value_payload(self, i):
        return self.ref(self.evalue(i), 1)

    def instruction_args(self, i):
        """The args vector of kernel call i."""
        chain = self.vec_table(self.ref(self.plan, 5), 0)
        ins = self.vec_table(self.ref(chain, 2), i)
        return self.ref(self.ref(ins, 1), 1)

    # extended header (eh00 at 8): program_size, segment_base, segment_size at 16, 24, 32
    def header(self):
        return struct.unpack_from("<QQQ", self.d, 16)

    def set_header(self, program_size, segment_base, segment_size):
        struct.pack_into("<QQQ", self.d, 16, program_size, segment_base, segment_size)

    def without_padding(self) -> "Pte":
        """The file cut at the end of its flatbuffer (programs without constants), so
        that the last byte of the file is the last byte of the flatbuffer: a read one
        byte too far is a heap overflow under ASan."""
        size, base, seg = self.header()
        assert seg == 0, "only for programs without a segment"
        self.d = self.d[:size]
        self.set_header(size, size, 0)
        return self


def plan_by_hand(p: Program, align: int = 16) -> Program:
    """Arena offsets one after another (no reuse): crafted programs stay independent of the planner."""
    off = 0
    for v in p.values:
        if isinstance(v, TensorValue) and not v.is_constant:
            v.offset = off
            off += (v.nbytes + align - 1) // align * align
    p.arena_size = off
    return p


def clamp_program() -> Program:
    """y = clamp(x, None, 1.0): a program with a None value (index 1)."""
    p = Program()
    x = p.add_tensor((1, 4))
    none = p.add_scalar("none")
    hi = p.add_scalar("float", 1.0)
    y = p.add_tensor((1, 4))
    p.instructions.append(Instruction("aten::clamp.out", [x, none, hi, y, y]))
    p.inputs, p.outputs = [x], [y]
    return plan_by_hand(p)


def relu_program() -> Program:
    p = Program()
    x = p.add_tensor((1, 4))
    y = p.add_tensor((1, 4))
    p.instructions.append(Instruction("aten::relu.out", [x, y, y]))
    p.inputs, p.outputs = [x], [y]
    return plan_by_hand(p)


def add_const_program() -> Program:
    """y = x + w with a constant w: a program with a constant segment."""
    p = Program()
    x = p.add_tensor((1, 4))
    w = p.add(TensorValue((1, 4), data=np.arange(4, dtype=np.float32).reshape(1, 4)))
    one = p.add_scalar("int", 1)
    y = p.add_tensor((1, 4))
    p.instructions.append(Instruction("aten::add.out", [x, w, one, y, y]))
    p.inputs, p.outputs = [x], [y]
    return plan_by_hand(p)


def split_program(constant_part: bool) -> Program:
    """split_with_sizes_copy(x, [2, 2], 1, out=[a, b]); b is a constant when `constant_part`."""
    p = Program()
    x = p.add_tensor((1, 4))
    sizes = p.add_scalar("int_list", [2, 2])
    dim = p.add_scalar("int", 1)
    a = p.add_tensor((1, 2))
    if constant_part:
        b = p.add(TensorValue((1, 2), data=np.zeros((1, 2), dtype=np.float32)))
    else:
        b = p.add_tensor((1, 2))
    parts = p.add_scalar("tensor_list", [a, b])
    p.instructions.append(Instruction("aten::split_with_sizes_copy.out", [x, sizes, dim, parts]))
    p.inputs, p.outputs = [x], [a]
    return plan_by_hand(p)


def depthwise_inplace_overflow_program(taps: int = 43691) -> Program:
    """mcu::quantized_depthwise_conv2d_inplace over a 1 x taps window with |x + offset| = 384 and
    |w| = 128 everywhere: taps * 49,152 overflows int32 once taps > 43,690."""
    p = Program()
    cl = (0, 2, 3, 1)
    x = p.add(TensorValue((1, 1, 1, taps), "int8", dim_order=cl, data=np.full((1, 1, taps, 1), -128, np.int8)))
    w = p.add(TensorValue((1, 1, taps, 1), "int8", data=np.full((1, 1, taps, 1), -128, np.int8)))
    none = p.add_scalar("none")
    ones, zeros = p.add_scalar("int_list", [1, 1]), p.add_scalar("int_list", [0, 0])
    mult = p.add(TensorValue((1,), "int32", data=np.array([1 << 30], np.int32)))
    shift = p.add(TensorValue((1,), "int32", data=np.array([-20], np.int32)))
    scratch = p.add_tensor((taps,), "int8")
    out = p.add_tensor((1, 1, 1, 1), "int8", dim_order=cl)
    i = p.add_scalar

    args = [x, w, none, ones, zeros, ones, i("int", 1), i("int", -256), i("int", 0), mult, shift, i("int", -128),
            i("int", 127), scratch, out, out]
    p.instructions.append(Instruction("mcu::quantized_depthwise_conv2d_inplace.out", args))
    p.inputs, p.outputs = [], [out]
    return plan_by_hand(p)


def bool_bytes_program() -> Program:
    """A bool constant whose bytes are 2, 128, 1, 0 (only 0 and 1 are C++ bools), read by the
    kernels that take bool inputs: add (float + bool, and bool + bool), logical_and, amax, any.
    A corrupt program (or a bool tensor aliasing a float one in the arena) gives kernels such
    bytes; they must read them as "not zero", never load an invalid bool (UBSan: found by the
    state fuzzer at 128)."""
    p = Program()
    x = p.add_tensor((1, 4))
    c = p.add(TensorValue((1, 4), "bool", data=np.array([[2, 128, 1, 0]], np.uint8)))
    one = p.add_scalar("int", 1)
    y_float = p.add_tensor((1, 4))
    y_bool = p.add_tensor((1, 4), "bool")
    y_and = p.add_tensor((1, 4), "bool")
    dims = p.add_scalar("int_list", [1])
    false = p.add_scalar("bool", False)
    y_max = p.add_tensor((1,), "bool")
    y_any = p.add_tensor((), "bool")
    p.instructions += [
        Instruction("aten::add.out", [x, c, one, y_float, y_float]),
        Instruction("aten::add.out", [c, c, one, y_bool, y_bool]),
        Instruction("aten::logical_and.out", [c, c, y_and, y_and]),
        Instruction("aten::amax.out", [c, dims, false, y_max, y_max]),
        Instruction("aten::any.all_out", [c, y_any, y_any]),
    ]
    p.inputs, p.outputs = [x], [y_float, y_bool, y_and, y_max, y_any]
    return plan_by_hand(p)


def bool_bytes_not_0_or_1() -> bytes:
    return pte.write(bool_bytes_program())


# ---------------------------------------------------------------- the holes of issue 16
def none_payload_not_a_table() -> bytes:
    """Item 1: a None value whose payload offset points at the file's last byte (inside the
    buffer, so the old check passed; its vtable offset is read past the end)."""
    f = Pte(pte.write(clamp_program())).without_padding()
    f.point(f.evalue(1), 1, len(f.d) - 1)
    return f.bytes()


def chains_vector_past_the_end() -> bytes:
    """Item 6: the chains vector starts 2 bytes before the end of the file: its verification
    fails, and the old error path read its length anyway."""
    f = Pte(pte.write(relu_program())).without_padding()
    f.point(f.plan, 5, len(f.d) - 2)
    return f.bytes()


def constant_in_out_list() -> bytes:
    """Item 3: split_with_sizes_copy writes its out list; one of them is a constant."""
    return pte.write(split_program(constant_part=True))


def segment_overlaps_flatbuffer() -> bytes:
    """Item 3: the constant segment starts inside the flatbuffer (its last 128 bytes)."""
    f = Pte(pte.write(add_const_program()))
    size, base, seg = f.header()
    f.set_header(size, size - 128, seg + (base - size) + 128)
    return f.bytes()


def depthwise_inplace_overflow() -> bytes:
    """Item 4: the in-place depthwise kernel must refuse more taps than int32 accumulates."""
    return pte.write(depthwise_inplace_overflow_program())


# ---------------------------------------------------------------- one per rejection code
def _patched(program: Program, edit) -> bytes:
    f = Pte(pte.write(program))
    edit(f)
    return f.bytes()


def _set_value_tag(value, tag):
    def edit(f):
        f.d[f.field_pos(f.evalue(value), 0)] = tag
    return edit


def wrong_argument_count() -> bytes:
    """relu.out takes 3 arguments (TOO); give it 2 (its args vector's length)."""
    return _patched(relu_program(), lambda f: f.put(f.instruction_args(0), "<I", 2))


def wrong_argument_tag() -> bytes:
    """The first argument of relu.out must be a Tensor: give it an Int value."""
    p = relu_program()
    k = p.add_scalar("int", 3)
    p.instructions[0].args[0] = k
    p.inputs = []
    return pte.write(p)


def constant_as_out() -> bytes:
    """relu.out's out tensor ('O') is a constant."""
    p = Program()
    x = p.add_tensor((1, 4))
    y = p.add(TensorValue((1, 4), data=np.zeros((1, 4), np.float32)))
    p.instructions.append(Instruction("aten::relu.out", [x, y, y]))
    p.inputs, p.outputs = [x], []
    return pte.write(plan_by_hand(p))


def misaligned_arena_tensor() -> bytes:
    """A float32 tensor at arena offset 2."""
    p = relu_program()
    p.values[1].offset = 2
    p.arena_size = 32
    return pte.write(p)


def misaligned_constant() -> bytes:
    """A float32 constant 2 bytes into its (aligned) segment slot; the shared sizes vector
    says [1, 3], so that it still fits in the segment."""
    def edit(f):
        cseg = f.ref(f.root, 5)
        offsets = f.ref(cseg, 1)
        f.put(offsets + 4 + 8 * 1, "<Q", 2)
        sizes = f.ref(f.value_payload(1), 2)
        f.put(sizes + 4 + 4, "<i", 3)
    return _patched(add_const_program(), edit)


def external_constant() -> bytes:
    """The constant w as an external constant (a key, no data: the form a firmware with generated layers embeds)
    on a firmware that holds no external data (no MCU_EXTERNAL_CONSTANTS)."""
    p = add_const_program()
    w = p.instructions[0].args[1]
    return pte.write(p, {w: "mcu-gen:00000000:16"})


def constant_out_of_bounds() -> bytes:
    """The constant's offset lies past the end of the segment."""
    def edit(f):
        cseg = f.ref(f.root, 5)
        offsets = f.ref(cseg, 1)
        f.put(offsets + 4 + 8 * 1, "<Q", 1 << 20)
    return _patched(add_const_program(), edit)


def arena_out_of_bounds() -> bytes:
    """The output tensor ends past the planned arena (arena_size says 16, it needs 32)."""
    p = relu_program()
    p.arena_size = 16
    return pte.write(p)


def unsupported_memory_id() -> bytes:
    """A planned tensor in memory 2 (this runtime has one arena, memory id 1)."""
    return _patched(relu_program(), lambda f: f.put(f.field_pos(f.ref(f.value_payload(0), 6), 0), "<I", 2))


def two_region_relu_program() -> Program:
    """relu with its input in memory 1 and its output in memory 2 (two planned buffers of 16 B each):
    the base of the two-region rules below (a runtime built with MCU_ARENA_REGIONS=2)."""
    p = relu_program()
    y = p.outputs[0]
    p.values[y].mem_id, p.values[y].offset = 2, 0
    p.arena_size, p.extra_arenas = 16, [16]
    return p


def second_buffer_out_of_bounds() -> bytes:
    """The output in memory 2 ends past that buffer's planned size (16 B planned, it needs 32)."""
    p = two_region_relu_program()
    p.values[p.outputs[0]].offset = 16
    return pte.write(p)


def memory_id_past_the_regions() -> bytes:
    """A planned tensor in memory 3 of a runtime with two arenas."""
    p = two_region_relu_program()
    p.values[p.outputs[0]].mem_id = 3
    return pte.write(p)


def memory_id_zero() -> bytes:
    """A planned tensor in memory 0 (ExecuTorch reserves it: no planned buffer)."""
    return _patched(relu_program(), lambda f: f.put(f.field_pos(f.ref(f.value_payload(0), 6), 0), "<I", 0))


# Loader rules of a runtime with two arenas (MCU_ARENA_REGIONS=2): (name, program bytes, code).
TWO_REGION_REJECTIONS = [
    ("tensor past its second buffer", second_buffer_out_of_bounds, "ArenaOutOfBounds"),
    ("tensor in memory 3 of 2", memory_id_past_the_regions, "UnsupportedProgram"),
    ("tensor in memory 0", memory_id_zero, "UnsupportedProgram"),
]


def tag_out_of_range() -> bytes:
    """A value tag past the last KernelTypes member."""
    return _patched(relu_program(), _set_value_tag(0, 40))


def root_past_the_end() -> bytes:
    f = Pte(pte.write(relu_program()))
    f.put(0, "<I", len(f.d) + 1000)
    return f.bytes()


def bad_identifier() -> bytes:
    f = Pte(pte.write(relu_program()))
    f.d[4:8] = b"XX99"
    return f.bytes()


def operator_missing() -> bytes:
    """An operator no firmware has."""
    p = relu_program()
    p.instructions[0].op = "mcu::no_such_op.out"
    return pte.write(p)


# (name, builder, expected loader error name) for the native runner; ArenaTooSmall and
# KernelFailed depend on the runner's arena and inputs and are tested where they are run.
REJECTIONS = [
    ("none payload is not a table", none_payload_not_a_table, "InvalidProgram"),
    ("chains vector past the end", chains_vector_past_the_end, "InvalidProgram"),
    ("constant in an out tensor list", constant_in_out_list, "BadArgument"),
    ("segment overlaps the flatbuffer", segment_overlaps_flatbuffer, "InvalidProgram"),
    ("wrong argument count", wrong_argument_count, "BadArgument"),
    ("wrong argument tag", wrong_argument_tag, "BadArgument"),
    ("constant as out tensor", constant_as_out, "BadArgument"),
    ("misaligned arena tensor", misaligned_arena_tensor, "Misaligned"),
    ("misaligned constant", misaligned_constant, "Misaligned"),
    ("constant out of bounds", constant_out_of_bounds, "ConstantOutOfBounds"),
    ("arena tensor out of bounds", arena_out_of_bounds, "ArenaOutOfBounds"),
    ("tensor in another memory", unsupported_memory_id, "UnsupportedProgram"),
    ("external constant", external_constant, "UnsupportedProgram"),
    ("tensor in memory 0", memory_id_zero, "UnsupportedProgram"),
    ("value tag out of range", tag_out_of_range, "InvalidProgram"),
    ("root offset past the end", root_past_the_end, "InvalidProgram"),
    ("wrong file identifier", bad_identifier, "BadIdentifier"),
    ("operator missing", operator_missing, "OperatorMissing"),
]

# Kernels the native runner of these programs has.
RUNNER_OPS = ("aten::relu.out", "aten::clamp.out", "aten::add.out", "aten::split_with_sizes_copy.out",
              "mcu::quantized_depthwise_conv2d_inplace.out", "aten::logical_and.out", "aten::amax.out",
              "aten::any.all_out")


def linear_bias_overflow_program(bias: int = 2**31 - 100) -> Program:
    """cortex_m::quantized_linear whose bias leaves no room for the sum of products: CMSIS-NN
    adds them in int32 without wrapping (found by the prepared-kernel fuzzer)."""
    p = Program()
    k = 16
    x = p.add(TensorValue((1, k), "int8", data=np.full((1, k), 127, np.int8)))
    w = p.add(TensorValue((2, k), "int8", data=np.full((2, k), 127, np.int8)))
    b = p.add(TensorValue((2,), "int32", data=np.array([bias, bias], np.int32)))
    none = p.add_scalar("none")
    i = p.add_scalar
    out = p.add_tensor((1, 2), "int8")
    args = [x, w, b, none, i("int", 0), i("int", 0), i("int", 0), i("int_list", [1 << 30]), i("int_list", [-10]),
            i("int", 127), i("int", -128), out, out]
    p.instructions.append(Instruction("cortex_m::quantized_linear.out", args))
    p.inputs, p.outputs = [], [out]
    return plan_by_hand(p)


def linear_bias_overflow() -> bytes:
    return pte.write(linear_bias_overflow_program())
