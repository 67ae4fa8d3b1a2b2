"""The graph IR shared by every stage of mcu-gen.

It mirrors the structure of an ExecuTorch ExecutionPlan on purpose, so that the
.pte writer and reader are thin: a Program is a list of values (tensors and
scalar arguments) and a list of kernel calls that refer to values by index.

- A TensorValue is either a constant (``data`` holds a numpy array, read in
  place from flash on the device) or an activation that lives in the arena at
  ``offset`` (filled in by the memory planner).
- Scalar arguments (ints, floats, bools, int lists, None, tensor lists) are
  values too, exactly as ExecuTorch stores them; ``int_list`` holds plain
  Python ints (the writer expands them into Int values as ET12 requires).
- An Instruction calls an operator by its full name (``"aten::relu.out"``)
  with the values of the operator's out-variant schema, in schema order,
  followed by the returned values (the out tensors again), as ExecuTorch does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

# ExecuTorch ScalarType numbering (scalar_type.fbs).
DTYPE_CODES = {
    "uint8": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "float16": 5,
    "float32": 6,
    "float64": 7,
    "bool": 11,
}
CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}
DTYPE_SIZES = {
    "uint8": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "float16": 2,
    "float32": 4,
    "float64": 8,
    "bool": 1,
}


@dataclass
class TensorValue:
    shape: tuple
    dtype: str = "float32"
    dim_order: Optional[tuple] = None  # None: contiguous (0, 1, ..., n-1)
    data: Optional[np.ndarray] = None  # constant data, already in the stored layout
    offset: Optional[int] = None  # arena offset, set by the planner
    # The planned buffer (ExecuTorch's allocation_info.memory_id) the offset is in: 1 is the
    # board's main RAM region, 2, 3, ... its other regions in board order (docs/memory_planning.md).
    mem_id: int = 1
    name: str = ""
    # Quantization parameters (per tensor or per channel) for int8 tensors.
    scale: Any = None
    zero_point: Any = None
    # A state tensor (a mutable buffer): an arena tensor that keeps its value from one run
    # to the next, set to ``init`` (stored layout) at load and on RESET.
    init: Optional[np.ndarray] = None

    def __post_init__(self):
        self.shape = tuple(int(s) for s in self.shape)
        if self.dim_order is None:
            self.dim_order = tuple(range(len(self.shape)))
        else:
            self.dim_order = tuple(int(d) for d in self.dim_order)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_SIZES[self.dtype]


@dataclass
class ScalarValue:
    """A non-tensor argument: kind is one of
    none, int, float, bool, int_list, float_list, bool_list, tensor_list, optional_tensor_list, string.
    For tensor_list / optional_tensor_list, ``value`` is a list of value indices (-1 for None)."""

    kind: str
    value: Any = None


Value = Union[TensorValue, ScalarValue]


@dataclass
class Instruction:
    op: str  # "namespace::name.overload", e.g. "aten::convolution.out"
    args: list  # value indices
    source: str = ""  # user source line, "file:line: code"

    @property
    def op_name(self) -> str:
        return self.op.rsplit(".", 1)[0]

    @property
    def overload(self) -> str:
        return self.op.rsplit(".", 1)[1] if "." in self.op else ""


@dataclass
class Program:
    values: list = field(default_factory=list)
    instructions: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # value indices
    outputs: list = field(default_factory=list)  # value indices
    arena_size: int = 0  # bytes of planned buffer 1 (memory id 1, the main RAM region)
    # Bytes of planned buffers 2, 3, ... (memory ids 2, 3, ...: the board's other RAM regions);
    # empty for a one-arena program. ExecuTorch's non_const_buffer_sizes = [0, arena_size, *extra_arenas].
    extra_arenas: list = field(default_factory=list)
    name: str = "forward"
    # Filled by the planner: bytes live at the peak step, ignoring alignment.
    lower_bound: int = 0
    meta: dict = field(default_factory=dict)
    # State tensors (value indices, each a TensorValue with ``init``): always live in the arena,
    # kept across runs; ``state_names`` are the module buffers they hold (same order).
    states: list = field(default_factory=list)
    state_names: list = field(default_factory=list)
    # A program with several methods (ExecuTorch's several execution plans sharing one constant
    # segment): this Program is method 0, ``more_methods`` holds methods 1.. (Programs of their own;
    # their ``more_methods`` stay empty). State tensors of the same name are one buffer, planned at
    # the same arena offset in every method (planner.plan_methods).
    more_methods: list = field(default_factory=list)

    # -- construction helpers -------------------------------------------------
    def add(self, value: Value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def add_tensor(self, shape, dtype="float32", **kw) -> int:
        return self.add(TensorValue(tuple(shape), dtype, **kw))

    def add_scalar(self, kind: str, value=None) -> int:
        return self.add(ScalarValue(kind, value))

    def tensor(self, index: int) -> TensorValue:
        v = self.values[index]
        if not isinstance(v, TensorValue):
            raise TypeError(f"value {index} is not a tensor")
        return v

    @property
    def operators(self) -> list:
        """Distinct operator names in first-use order (the .pte operator table)."""
        seen = []
        for ins in self.instructions:
            if ins.op not in seen:
                seen.append(ins.op)
        return seen

    def tensor_indices(self) -> list:
        return [i for i, v in enumerate(self.values) if isinstance(v, TensorValue)]

    def constant_bytes(self) -> int:
        return sum(v.nbytes for v in self.values if isinstance(v, TensorValue) and v.is_constant)

    @property
    def arena_sizes(self) -> list:
        """Bytes of each planned buffer, memory id 1 first."""
        return [self.arena_size] + list(self.extra_arenas)

    def arena_of(self, mem_id: int) -> int:
        sizes = self.arena_sizes
        return sizes[mem_id - 1] if 1 <= mem_id <= len(sizes) else 0

    @property
    def has_state(self) -> bool:
        return bool(self.states)

    @property
    def methods(self) -> list:
        """Every method of the program, method 0 (this Program) first."""
        return [self] + list(self.more_methods)

    @property
    def method_names(self) -> list:
        return [m.name for m in self.methods]

    def method(self, name: str) -> "Program":
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(f"the program has no method {name!r} (it has {', '.join(self.method_names)})")

    @property
    def all_operators(self) -> list:
        """Distinct operator names over every method, in first-use order."""
        seen = []
        for m in self.methods:
            seen += [op for op in m.operators if op not in seen]
        return seen

    @property
    def all_states(self) -> list:
        """(name, method, value index) of every state tensor, once per name (first method using it)."""
        out, seen = [], set()
        for m in self.methods:
            for i, name in zip(m.states, m.state_names):
                if name not in seen:
                    seen.add(name)
                    out.append((name, m, i))
        return out

    @property
    def max_arena_size(self) -> int:
        """The arena every method fits in: the largest method's."""
        return max(m.arena_size for m in self.methods)


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
