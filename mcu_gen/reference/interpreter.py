"""Host reference interpreter of an IR Program: the "PyTorch" side of verification.

    run_reference(program, inputs: list[np.ndarray]) -> list[np.ndarray]

Each instruction names an out-variant (``aten::relu.out``); the interpreter
calls the matching functional op (``torch.ops.aten.relu.default``) on torch
tensors and writes the results into the instruction's out values.

Memory: every tensor has its own buffer, never the memory plan's arena, so a
planner that overlaps two live tensors cannot corrupt the reference the same way
it corrupts the device. What the plan says about shared bytes is followed where
it is part of the program's meaning: views (``meta["aliases"]``, and for a .pte
the views ExecuTorch plans at their source's offset, mcu_gen.pte.planned_views)
read their source's bytes, and slices (``meta["slices"]``: producers writing
into part of a concatenation's output) are windows of their output's buffer.
``shared_arena=True`` runs the program in one arena at the planned offsets, as
the device does: `check_planned_execution` compares the two.
"""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.capture import ops as _ops  # noqa: F401  (registers torch.ops.mcu)
from mcu_gen.capture.export import is_out_arg, find_functional
from mcu_gen.program.ir import CODE_DTYPES, DTYPE_SIZES, Program, ScalarValue, TensorValue
from mcu_gen.errors import McuGenError

_MEMORY_FORMATS = {0: torch.contiguous_format, 1: torch.preserve_format, 2: torch.channels_last,
                   3: torch.channels_last_3d}


class ReferenceError(McuGenError, RuntimeError):
    """The host reference did not produce outputs. Two kinds say why: ReferenceUnsupported (it has no
    implementation of something in this program: a caller may fall back to other checks and say so) and
    OperatorFailed (an operator raised while running: a failure, never to be taken as "cannot check")."""


class ReferenceUnsupported(ReferenceError):
    """The reference cannot run this program: an operator, an overload or a variant it does not have."""


class OperatorFailed(ReferenceError):
    """An instruction raised while the reference ran it; the original exception is __cause__ and
    .cause, its type named in the message."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.cause = cause


def _torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def resolve_op(name: str):
    """torch OpOverload for 'ns::name.overload'."""
    ns, rest = name.split("::", 1)
    opname, overload = rest.rsplit(".", 1) if "." in rest else (rest, "default")
    if ns == "dim_order_ops" and not hasattr(torch.ops.dim_order_ops, opname):
        try:  # ExecuTorch's dim-order ops (in .pte files exported by ExecuTorch)
            import executorch.exir.passes.dim_order_ops_registry  # noqa: F401
        except ImportError:
            pass
    try:
        return getattr(getattr(getattr(torch.ops, ns), opname), overload)
    except (AttributeError, RuntimeError) as e:
        raise ReferenceUnsupported(f"unknown operator {name}") from e


class Memory:
    def __init__(self, program: Program, shared_arena: bool = False):
        self.program = program
        self.aliases = program.meta.get("aliases", {}) or {}
        self.slices = program.meta.get("slices", {}) or {}
        acts = [v for v in program.values if isinstance(v, TensorValue) and not v.is_constant]
        self.shared = shared_arena
        if shared_arena:
            if not all(v.offset is not None for v in acts):
                raise ReferenceError("shared_arena needs a planned program")
            # One byte array per planned buffer (memory id), as the device has one arena per RAM region.
            self.arenas = {}
            for mid in {1} | {v.mem_id for v in acts}:
                size = max([program.arena_of(mid)] + [v.offset + v.nbytes for v in acts if v.mem_id == mid])
                self.arenas[mid] = torch.zeros(size, dtype=torch.uint8)
            self.arena = self.arenas[1]
        self.buffers = {}  # root value -> its own bytes
        self.written = set()  # values an input, a state or an instruction wrote

    def holds_data(self, index: int) -> bool:
        """Whether value `index` was written, directly, through the view it is, or by its slices."""
        seen = set()
        while index not in seen:
            seen.add(index)
            if index in self.written or self.program.values[index].is_constant:
                return True
            if any(out == index and s in self.written for s, (out, _d) in self.slices.items()):
                return True
            if index not in self.aliases:
                return False
            index = self.aliases[index]
        return False

    def _storage(self, index: int, depth: int = 0) -> tuple:
        """(byte tensor, byte offset) where value `index` lives."""
        v = self.program.values[index]
        if self.shared:
            return self.arenas[v.mem_id], v.offset
        if depth > len(self.program.values):
            raise ReferenceError(f"value {index}: its views and slices form a cycle")
        if index in self.aliases:
            return self._storage(self.aliases[index], depth + 1)
        if index in self.slices:
            out, displacement = self.slices[index]
            buf, off = self._storage(out, depth + 1)
            return buf, off + displacement
        if index not in self.buffers:
            self.buffers[index] = torch.zeros(v.nbytes, dtype=torch.uint8)
        return self.buffers[index], 0

    def tensor(self, index: int) -> torch.Tensor:
        v = self.program.values[index]
        if v.is_constant:  # its data in the stored layout (dim_order), as the device reads it
            stored = torch.from_numpy(np.asarray(v.data, order="C")).reshape([v.shape[d] for d in v.dim_order])
            inverse = [v.dim_order.index(i) for i in range(len(v.dim_order))]
            return stored.permute(inverse) if inverse != list(range(len(inverse))) else stored
        return self._view(v, *self._storage(index))

    @staticmethod
    def _view(v: TensorValue, buf: torch.Tensor, offset: int) -> torch.Tensor:
        stored = [v.shape[d] for d in v.dim_order]
        n = v.numel * DTYPE_SIZES[v.dtype]
        if offset + n > buf.numel():
            raise ReferenceError(f"value '{v.name}': {n} bytes at {offset} do not fit its buffer ({buf.numel()})")
        flat = buf[offset:offset + n].view(_torch_dtype(v.dtype))
        t = flat.reshape(stored)
        inverse = [v.dim_order.index(i) for i in range(len(v.dim_order))]
        return t.permute(inverse) if inverse != list(range(len(inverse))) else t

    def write(self, index: int, value: torch.Tensor) -> None:
        v = self.program.values[index]
        value = value.to(_torch_dtype(v.dtype))
        if tuple(value.shape) != v.shape:
            raise ReferenceError(f"value {index}: result shape {tuple(value.shape)} != planned {v.shape}")
        self.tensor(index).copy_(value)
        self.written.add(index)


def _decode(mem: Memory, index: int, type_str: str):
    v = mem.program.values[index]
    if isinstance(v, TensorValue):
        return mem.tensor(index)
    assert isinstance(v, ScalarValue)
    k, x = v.kind, v.value
    if k == "none":
        return None
    if k == "int":
        if "ScalarType" in type_str:
            return _torch_dtype(CODE_DTYPES[x])
        if "MemoryFormat" in type_str:
            return _MEMORY_FORMATS[x]
        if "Layout" in type_str:
            return torch.strided
        if "Device" in type_str:
            return torch.device("cpu")
        return int(x)
    if k == "float":
        return float(x)
    if k == "bool":
        return bool(x)
    if k in ("int_list", "float_list", "bool_list"):
        return list(x)
    if k == "tensor_list":
        return [mem.tensor(i) for i in x]
    if k == "optional_tensor_list":
        return [None if i < 0 else mem.tensor(i) for i in x]
    if k == "string":
        return x
    raise ReferenceError(f"value {index}: unknown scalar kind {k}")


def _mutating_overload(out_op):
    """The overload without out arguments that updates some of its (non-out) arguments in place, as
    the out-variant does (_native_batch_norm_legit.out -> .default, the running stats): run on views
    of the program's memory, its updates land where the device's kernel writes them."""
    wanted = [(a.name, str(a.type)) for a in out_op._schema.arguments if not is_out_arg(a)]
    packet = out_op.overloadpacket
    for name in packet.overloads():
        ov = getattr(packet, name)
        if not any(is_out_arg(a) for a in ov._schema.arguments) and \
                [(a.name, str(a.type)) for a in ov._schema.arguments] == wanted:
            return ov
    return None


def _functional_with_options(out_op):
    """The functional overload that also takes ATen's TensorOptions (dtype, layout, device, pin_memory),
    which the out-variant has not: its out tensor carries the dtype (_to_copy.out, schema.find_out_variant)."""
    from mcu_gen.capture.schema import TENSOR_OPTIONS

    wanted = [(a.name, str(a.type)) for a in out_op._schema.arguments if not is_out_arg(a)]
    packet = out_op.overloadpacket
    for name in packet.overloads():
        ov = getattr(packet, name)
        args = ov._schema.arguments
        if any(is_out_arg(a) for a in args) or ov._schema.is_mutable:
            continue
        if [(a.name, str(a.type)) for a in args if a.name not in TENSOR_OPTIONS] == wanted:
            return ov
    return None


def execute_portable(mem: Memory, ins) -> None:
    if ins.op == "aten::copy_":  # in place: self = src (ExecuTorch's mutable-buffer update)
        if len(ins.args) < 2:
            raise ReferenceError(f"{ins.op}: {len(ins.args)} arguments, needs self and src")
        mem.write(ins.args[0], mem.tensor(ins.args[1]).clone())
        return
    out_op = resolve_op(ins.op)
    fn = find_functional(out_op) or _mutating_overload(out_op)
    options = {}
    if fn is None:
        fn = _functional_with_options(out_op)
        if fn is not None and any(a.name == "dtype" for a in fn._schema.arguments):
            out_index = ins.args[[is_out_arg(a) for a in out_op._schema.arguments].index(True)]
            options["dtype"] = _torch_dtype(mem.program.tensor(out_index).dtype)
    if fn is None:
        raise ReferenceUnsupported(f"{ins.op}: no functional overload to run it with")
    schema_args = out_op._schema.arguments
    if len(ins.args) < len(schema_args):
        raise ReferenceError(f"{ins.op}: {len(ins.args)} arguments, schema needs {len(schema_args)}")
    args, kwargs, outs = [], {}, []
    for a, index in zip(schema_args, ins.args):
        if is_out_arg(a):
            v = mem.program.values[index]
            outs.extend(v.value if isinstance(v, ScalarValue) else [index])
            continue
        value = _decode(mem, index, str(a.type))
        if a.kwarg_only:
            kwargs[a.name] = value
        else:
            args.append(value)
    with torch.no_grad():
        result = fn(*args, **kwargs, **options)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(results) != len(outs):
        raise ReferenceError(f"{ins.op}: {len(results)} results for {len(outs)} out values")
    for index, r in zip(outs, results):
        mem.write(index, r)


def _record_file_views(program: Program) -> None:
    """A program read from a .pte (pte.read) whose plan implies views (ExecuTorch plans a dropped
    reshape at its source's offset): record them as aliases, as plan.views.read_program does, so
    that each tensor in its own buffer still sees its source's bytes."""
    if "read_from" in program.meta and "aliases" not in program.meta:
        from mcu_gen.plan.views import planned_views

        program.meta["aliases"] = planned_views(program)


def initial_state(program: Program) -> dict:
    """State tensor (value index) -> its initial value in logical layout (what load and RESET set)."""
    out = {}
    for i in program.states:
        v = program.tensor(i)
        arr = np.asarray(v.init)
        if list(v.dim_order) != list(range(len(v.shape))):
            arr = arr.reshape([v.shape[d] for d in v.dim_order]).transpose([v.dim_order.index(k) for k in range(len(v.shape))])
        out[i] = np.asarray(arr.reshape(v.shape), order="C")
    return out


def interpret(program: Program, inputs, execute, trace: bool = False, shared_arena: bool = False,
              state: dict | None = None) -> tuple[list, list]:
    """Runs ``program`` on ``inputs`` (one array per program input, cast to its dtype), calling
    ``execute(mem, ins)`` for every instruction: (outputs, trace). With ``trace``, trace[k] maps
    each value instruction k wrote to a copy of it (logical layout) taken right after it.
    Every tensor in its own buffer, or (``shared_arena``) all in one arena at the planned offsets.
    ``state`` (programs with state tensors): value index -> value before the run (missing: the
    initial value), updated in place to the values after the run, as the device keeps them."""
    if len(inputs) != len(program.inputs):
        raise ReferenceError(f"program has {len(program.inputs)} inputs, got {len(inputs)}")
    _record_file_views(program)
    mem = Memory(program, shared_arena)
    for index, x in zip(program.inputs, inputs):
        x = torch.as_tensor(np.asarray(np.asarray(x), order="C"))
        v = program.tensor(index)
        if tuple(x.shape) != v.shape:
            raise ReferenceError(f"input value {index}: shape {tuple(x.shape)}, program expects {v.shape}")
        mem.write(index, x.to(_torch_dtype(v.dtype)))
    if program.states:
        before = initial_state(program)
        before.update(state or {})
        for index in program.states:
            mem.write(index, torch.as_tensor(np.asarray(before[index], order="C")))
    steps, written = [], []
    if trace:
        plain_write = mem.write
        mem.write = lambda index, value: (written.append(index), plain_write(index, value))[1]
    for ins in program.instructions:
        written.clear()
        try:
            execute(mem, ins)
        except ReferenceError:
            raise
        except Exception as e:
            where = f" ({ins.source})" if ins.source else ""
            raise OperatorFailed(f"{ins.op}{where}: {type(e).__name__}: {e}", e) from e
        if trace:
            steps.append({i: mem.tensor(i).detach().clone().contiguous().numpy() for i in dict.fromkeys(written)})
    for i in program.outputs:
        if not mem.holds_data(i):
            raise ReferenceError(f"program output value {i} ('{program.values[i].name}') is never written: "
                                 "no instruction writes it and it is no view of a value that is")
    outputs = [mem.tensor(i).detach().clone().contiguous().numpy() for i in program.outputs]
    if state is not None:
        for index in program.states:
            state[index] = mem.tensor(index).detach().clone().contiguous().numpy()
    return outputs, steps


def run_reference_trace(program: Program, inputs, execute=None) -> tuple[list, list]:
    """Like run_reference, and also every intermediate: (outputs, trace) where trace[k] maps each
    value instruction k wrote to a copy of it (logical layout) taken right after instruction k.
    ``execute(mem, ins)`` runs one instruction (default: the torch-op interpreter here)."""
    return interpret(program, inputs, execute or execute_portable, trace=True)
