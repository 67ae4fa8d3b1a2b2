"""Capture a model with torch.export and lower it to an IR Program.

    export_model(spec, fuse=True, has_kernel=None) -> mcu_gen.ir.Program

1. torch.export.export(module.eval(), example_inputs).run_decompositions() (core ATen)
2. graph passes (mcu_gen/capture/passes.py): drop no-ops, fold constants and BatchNorm,
   and with ``fuse=True`` rewrite to mcu:: ops with fused activations
3. lowering: every op becomes an Instruction calling the op's out-variant with
   ExecuTorch's argument convention (schema order, defaults filled in, then the
   out tensors, then the returned values); view ops become aliases
   (``program.meta["aliases"] = {view value: input value}``) and cost nothing.
"""
from __future__ import annotations

import operator
import re
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
import torch.fx
from torch.export.graph_signature import InputKind, OutputKind

from mcu_gen.capture import ops as _ops  # noqa: F401  (registers torch.ops.mcu)
from mcu_gen.program.ir import DTYPE_CODES, Instruction, Program, ScalarValue, TensorValue
from mcu_gen.capture.model_file import ModelSpec
from mcu_gen.capture.passes import FREE_VIEWS, ConstGraph, run_passes
from mcu_gen.errors import McuGenError

aten = torch.ops.aten


class ExportError(McuGenError):
    """The model cannot be captured (torch.export failed, dynamic shapes, unsupported inputs)."""


class UnsupportedOperatorError(ExportError):
    """An operator that mcu-gen (or the target's kernel set) cannot run."""


# c10::MemoryFormat / c10::Layout numbering, as ExecuTorch stores them (Int values).
_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1, torch.channels_last: 2,
                   torch.channels_last_3d: 3}
_LAYOUTS = {torch.strided: 0}


def torch_dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).replace("torch.", "")
    if name not in DTYPE_CODES:
        raise ExportError(f"dtype {dtype} is not supported")
    return name


def op_name(op) -> str:
    """'aten::relu.out' for an OpOverload."""
    s = op._schema
    return f"{s.name}.{s.overload_name or 'default'}"


# -- out-variant lookup --------------------------------------------------------------------------
def is_out_arg(a) -> bool:
    return a.kwarg_only and a.alias_info is not None and a.alias_info.is_write


def _is_number(v) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, (torch.fx.Node, _Lifted))


def find_out_variant(op, bound: Optional[dict] = None):
    """The out-variant OpOverload of functional ``op`` (same name, same non-out arguments,
    plus kwarg-only out arguments). A Python number passed where the schema says Tensor
    selects the Scalar variant (mul.Tensor(x, 2) -> mul.Scalar_out)."""
    bound = bound or {}
    wanted = []
    for a in op._schema.arguments:
        t = str(a.type)
        if t == "Tensor" and _is_number(bound.get(a.name)):
            t = "number"  # how the schema parser spells Scalar
        wanted.append((a.name, t))
    packet = op.overloadpacket
    for name in packet.overloads():
        ov = getattr(packet, name)
        args = ov._schema.arguments
        outs = [a for a in args if is_out_arg(a)]
        if not outs:
            continue
        rest = [(a.name, str(a.type)) for a in args if not is_out_arg(a)]
        if rest == wanted:
            return ov
    return None


def find_functional(out_op):
    """The functional OpOverload of an out-variant (inverse of find_out_variant)."""
    wanted = [(a.name, str(a.type)) for a in out_op._schema.arguments if not is_out_arg(a)]
    packet = out_op.overloadpacket
    for name in packet.overloads():
        ov = getattr(packet, name)
        args = ov._schema.arguments
        if any(is_out_arg(a) for a in args) or ov._schema.is_mutable:
            continue
        if [(a.name, str(a.type)) for a in args] == wanted:
            return ov
    return None


def bind_args(schema, args, kwargs) -> dict:
    """Map argument name -> value for a call, with schema defaults filled in."""
    bound = {}
    for i, a in enumerate(schema.arguments):
        if not a.kwarg_only and i < len(args):
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
        elif is_out_arg(a):
            continue
        else:
            raise ExportError(f"{schema.name}: missing argument {a.name}")
    return bound


# -- source lines --------------------------------------------------------------------------------
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n([^\n]*)')
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


def source_line(node: torch.fx.Node, user_file: Optional[str]) -> str:
    """'path:line: code' of the last frame of the node's stack trace in the user's file."""
    trace = node.meta.get("stack_trace") or ""
    frames = [(f, int(n), code.strip()) for f, n, code in _FRAME.findall(trace)]
    if not frames:
        return ""
    user = str(Path(user_file).resolve()) if user_file else None
    mine = [fr for fr in frames if user and _same_file(fr[0], user)]
    if mine:
        f, n, code = mine[-1]
        return f"{f}:{n}: {code}"
    # No frame in the user's file (e.g. an nn.Sequential): the innermost frame outside
    # torch, else the innermost frame, plus the submodule that made the op.
    f, n, code = ([fr for fr in frames if not fr[0].startswith(_TORCH_DIR)] or frames)[-1]
    stack = node.meta.get("nn_module_stack") or {}
    module = ""
    if stack:
        path, cls = list(stack.values())[-1]
        cls = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
        module = f" [module {path or '<root>'}: {cls.rsplit('.', 1)[-1]}]"
    return f"{f}:{n}: {code}{module}"


def _same_file(a: str, b: str) -> bool:
    try:
        return str(Path(a).resolve()) == b
    except OSError:
        return a == b


def _user_file(spec: ModelSpec) -> Optional[str]:
    if spec.path:
        return spec.path
    if spec.module is not None:
        import inspect

        try:
            return inspect.getsourcefile(type(spec.module))
        except TypeError:
            return None
    return None


# -- capture ------------------------------------------------------------------------------------
# Core-ATen ops whose decomposition would cost arena bytes or passes and that have portable kernels
# (kernels_portable/op_<name>.cpp): kept whole. reflection/replication pads decompose to
# arange + index.Tensor gathers, glu to two slice copies, a sigmoid and a mul; roll to one index_select per
# rolled dim (an intermediate buffer each, and an int64 index constant); tril to where() with a constant
# mask; select_scatter to where() over a full-size expand_copy of src. (triu is not kept: ExecuTorch's
# portable kernels have no triu.out, and its where() costs no arena byte more.)
KEEP_UNDECOMPOSED = ("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
                     "replication_pad2d", "replication_pad3d", "glu", "roll", "tril", "select_scatter")


def decomposition_table():
    table = torch.export.default_decompositions()
    for name in KEEP_UNDECOMPOSED:
        op = getattr(torch.ops.aten, name).default
        if op in table:
            table.pop(op)
    return table


def capture(spec: ModelSpec) -> torch.export.ExportedProgram:
    where = f"{spec.name} ({spec.path})" if spec.path else spec.name
    ep = spec.exported_program
    if ep is None:
        if spec.module is None:
            raise ExportError(f"{where}: the model spec has neither a module nor an exported program")
        try:
            ep = torch.export.export(spec.module.eval(), tuple(spec.example_inputs))
        except Exception as e:  # torch.export raises many exception types
            raise ExportError(
                f"{where}: torch.export could not capture the model (mcu-gen needs static shapes and no "
                f"data-dependent control flow):\n{type(e).__name__}: {e}"
            ) from e
    try:
        return ep.run_decompositions(decomposition_table())
    except Exception as e:
        raise ExportError(f"{where}: decomposition to core ATen failed: {type(e).__name__}: {e}") from e


def to_const_graph(ep: torch.export.ExportedProgram) -> tuple:
    """Turn parameters, buffers and lifted constants into get_attr nodes.
    Returns (ConstGraph, user input placeholders, output kinds, states): a buffer the model
    mutates stays a placeholder (a state tensor), ``states`` maps its placeholder name to
    (buffer name, initial value); ``output kinds`` has, per output of the graph, None for a user
    output or the buffer name a BUFFER_MUTATION output writes."""
    gm = ep.graph_module
    graph = gm.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    first_op = next(n for n in graph.nodes if n.op != "placeholder")
    cg = ConstGraph(gm)
    mutated = set(ep.graph_signature.buffers_to_mutate.values())
    user_inputs, states = [], {}
    for spec in ep.graph_signature.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(node.meta.get("val"), torch.Tensor):
                raise ExportError(f"input {node.name}: only tensor inputs are supported")
            user_inputs.append(node)
            continue
        if spec.kind == InputKind.BUFFER and spec.target in mutated:
            tensor = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
            states[node.name] = (spec.target, tensor.detach().clone())
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            tensor = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            tensor = ep.constants[spec.target]
        else:
            raise ExportError(f"input {node.name}: {spec.kind.name} inputs are not supported")
        new = cg.add_const(tensor, first_op, "p")
        node.replace_all_uses_with(new)
        graph.erase_node(node)
    kinds = []
    for spec in ep.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT:
            kinds.append(None)
        elif spec.kind == OutputKind.BUFFER_MUTATION and spec.target in mutated:
            kinds.append(spec.target)
        else:
            raise ExportError(f"the model mutates {spec.target} ({spec.kind.name}); mcu-gen supports models "
                              f"that mutate registered buffers (state), not {spec.kind.name}")
    cg.cleanup()
    return cg, user_inputs, kinds, states


# -- lowering -----------------------------------------------------------------------------------
# What to write instead of an op whose output shape depends on the data (Fp32Lowering._check_static).
_SELECT_HINT = ("; x[mask] and torch.masked_select return one element per True position: keep x's shape with "
                "torch.where(mask, x, 0) (or x * mask) and count with mask.sum()")
_DATA_DEPENDENT_HINTS = {
    "aten::nonzero": ("; torch.nonzero / argwhere return one row per True position: keep the mask's shape "
                      "instead (torch.where(cond, x, 0), x * cond, cond.sum() for the count)"),
    "aten::index": _SELECT_HINT,
    "aten::masked_select": _SELECT_HINT,
}
for _name in ("aten::_unique2", "aten::unique_dim", "aten::unique_consecutive", "aten::_unique",
              "aten::unique_dim_consecutive"):
    _DATA_DEPENDENT_HINTS[_name] = (
        "; torch.unique returns one element per distinct value: for values in a known range 0..K-1 use "
        "the fixed-size (x.reshape(-1, 1) == torch.arange(K)).any(0) (which values occur) or .sum(0) (counts)")


class _Lifted(int):
    """The value index of a number made a constant tensor (Fp32Lowering._numbers_as_tensors)."""


class Fp32Lowering:
    def __init__(self, cg: ConstGraph, user_file, has_kernel):
        self.cg = cg
        self.user_file = user_file
        self.has_kernel = has_kernel
        self.program = Program()
        self.env = {}  # fx node -> value index (or list of indices for multi-output nodes)
        self.aliases = {}

    # values
    def _check_static(self, node, val):
        if any(not isinstance(s, int) for s in val.shape) and node.op == "placeholder":
            raise ExportError(
                f"input {node.name} has a dynamic shape {list(val.shape)}; mcu-gen needs static shapes "
                f"(export without dynamic_shapes)"
            )
        if any(not isinstance(s, int) for s in val.shape):
            hint = _DATA_DEPENDENT_HINTS.get(getattr(getattr(node.target, "_schema", None), "name", None), "")
            raise UnsupportedOperatorError(
                f"{self._op_text(node)} produces a tensor whose shape depends on the input data "
                f"({list(val.shape)}); mcu-gen needs static shapes (every tensor's size is fixed when the "
                f"memory plan is made at build time){hint}{self._where(node)}"
            )

    def _check_data_dependent(self, node):
        """Refuse an op whose output shape depends on the data (nonzero, x[mask], unique) before
        looking for its kernel: no kernel could fill a statically planned tensor of unknown size."""
        val = node.meta.get("val")
        for r in val if isinstance(val, (tuple, list)) else [val]:
            if isinstance(r, torch.Tensor):
                self._check_static(node, r)

    def tensor_value(self, node, val) -> int:
        self._check_static(node, val)
        return self.program.add(TensorValue(tuple(val.shape), torch_dtype_name(val.dtype), name=node.name))

    def constant_value(self, tensor: torch.Tensor, name: str) -> int:
        t = tensor.detach().contiguous()
        data = np.asarray(t.numpy(), order="C")
        return self.program.add(TensorValue(tuple(t.shape), torch_dtype_name(t.dtype), data=data, name=name))

    def _where(self, node) -> str:
        src = source_line(node, self.user_file)
        return f"\n  at {src}" if src else ""

    def _op_text(self, node) -> str:
        t = node.target
        return op_name(t) if hasattr(t, "_schema") else str(t)

    def arg_value(self, value, type_str: str) -> int:
        p = self.program
        if isinstance(value, _Lifted):
            return int(value)
        if isinstance(value, torch.fx.Node):
            return self.env[value]
        if value is None:
            return p.add_scalar("none")
        if isinstance(value, bool):
            return p.add_scalar("bool", value)
        if isinstance(value, int):
            if type_str in ("float", "Optional[float]"):
                return p.add_scalar("float", float(value))
            return p.add_scalar("int", value)
        if isinstance(value, float):
            return p.add_scalar("float", value)
        if isinstance(value, torch.dtype):
            return p.add_scalar("int", DTYPE_CODES[torch_dtype_name(value)])
        if isinstance(value, torch.memory_format):
            return p.add_scalar("int", _MEMORY_FORMATS[value])
        if isinstance(value, torch.layout):
            return p.add_scalar("int", _LAYOUTS[value])
        if isinstance(value, torch.device):
            return p.add_scalar("int", 0)
        if isinstance(value, str):
            return p.add_scalar("string", value)
        if isinstance(value, (list, tuple)):
            # str(schema type): List[Tensor], List[Optional[Tensor]], List[int], List[float], List[bool]
            if "Optional[Tensor]" in type_str:
                return p.add_scalar("optional_tensor_list", [-1 if v is None else self.env[v] for v in value])
            if "Tensor" in type_str:
                return p.add_scalar("tensor_list", [self.env[v] for v in value])
            if "bool" in type_str:
                return p.add_scalar("bool_list", [bool(v) for v in value])
            if "float" in type_str:
                return p.add_scalar("float_list", [float(v) for v in value])
            if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                return p.add_scalar("int_list", [int(v) for v in value])
        raise ExportError(f"cannot represent argument {value!r} of type {type_str}")

    # nodes
    def lower(self, user_inputs, user_outputs, states=None, mutations=()) -> Program:
        """``states``: placeholder name -> (buffer name, initial value) of the state tensors;
        ``mutations``: (buffer name, node) pairs, the new value of each state after a run."""
        states = states or {}
        state_value = {}
        for node in self.cg.graph.nodes:
            if node.op == "placeholder" and node.name in states:
                target, init = states[node.name]
                v = self.tensor_value(node, node.meta["val"])
                t = self.program.tensor(v)
                if tuple(init.shape) != t.shape or torch_dtype_name(init.dtype) != t.dtype:
                    raise ExportError(f"buffer {target}: initial value {tuple(init.shape)} {init.dtype} does not "
                                      f"match the graph's {t.shape} {t.dtype}")
                t.init = np.asarray(init.contiguous().numpy(), order="C")
                t.name = target
                self.env[node] = v
                state_value[target] = v
                self.program.states.append(v)
                self.program.state_names.append(target)
            elif node.op == "placeholder":
                self.env[node] = self.tensor_value(node, node.meta["val"])
                self.program.inputs.append(self.env[node])
            elif node.op == "get_attr":
                self.env[node] = self.constant_value(self.cg.const(node), node.name)
            elif node.op == "call_function":
                self.lower_call(node)
        for node in user_outputs:
            self.program.outputs.append(self.output_value(node))
        for target, node in mutations:
            self.state_update(state_value[target], node)
        self.program.meta["aliases"] = dict(self.aliases)
        return self.program

    def state_update(self, state: int, node) -> None:
        """The end of a run writes a state's new value into it (a copy, as ExecuTorch's emitter
        does with copy_; the planner keeps the state live for the whole run)."""
        if not isinstance(node, torch.fx.Node):
            raise ExportError(f"the new value of buffer {self.program.tensor(state).name} is not a tensor")
        src = self.env[node]
        if self.root(src) == state:
            return  # written in place already (or unchanged)
        s, t = self.program.tensor(src), self.program.tensor(state)
        if s.shape != t.shape or s.dtype != t.dtype:
            raise ExportError(f"buffer {t.name}: the model writes a {s.dtype} {list(s.shape)} value into a "
                              f"{t.dtype} {list(t.shape)} buffer")
        if self.write_in_place(state, src):
            return
        fmt = self.program.add_scalar("none")
        self.program.instructions.append(
            Instruction("aten::clone.out", [src, fmt, state, state], source_line(node, self.user_file)))

    def _tensor_uses(self, ins) -> list:
        out = []
        for a in ins.args:
            v = self.program.values[a]
            if isinstance(v, TensorValue):
                out.append(a)
            elif v.kind in ("tensor_list", "optional_tensor_list"):
                out.extend(j for j in v.value if j is not None and j >= 0)
        return out

    def write_in_place(self, state: int, src: int) -> bool:
        """The instruction that computes a state's new value writes it straight into the state
        (no copy), when nothing reads the old value from that instruction on, and the new value
        is an instruction's own out (not a view, an input, a constant or a graph output); views of
        the new value become views of the state."""
        p = self.program
        if src in self.aliases or src in p.inputs or src in p.outputs or p.tensor(src).is_constant or src in p.states:
            return False
        producers = [k for k, ins in enumerate(p.instructions) if src in self._tensor_uses(ins)]
        if not producers:
            return False
        step = producers[0]
        ins = p.instructions[step]
        if ins.op.startswith("delegate:") or ins.args[-1] != src:  # the out (and return) is the last argument
            return False
        state_views = {state} | {a for a in self.aliases if self.root(a) == state}
        for k in range(step, len(p.instructions)):
            if state_views & set(self._tensor_uses(p.instructions[k])):
                return False  # the old value is still read
        for a, parent in list(self.aliases.items()):  # views of the new value view the state
            if parent == src:
                self.aliases[a] = state
        for k in range(step, len(p.instructions)):  # later uses of the new value read the state
            other = p.instructions[k]
            other.args = [state if a == src else a for a in other.args]
            for a in other.args:
                v = p.values[a]
                if isinstance(v, ScalarValue) and v.kind in ("tensor_list", "optional_tensor_list"):
                    v.value = [state if j == src else j for j in v.value]
        return True

    def root(self, v: int) -> int:
        while v in self.aliases:
            v = self.aliases[v]
        return v

    def output_value(self, node) -> int:
        if not isinstance(node, torch.fx.Node):
            raise ExportError(f"model output {node!r} is not a tensor")
        v = self.env[node]
        root = self.root(v)
        if self.program.values[root].is_constant or root in self.program.inputs:
            # the output must be a buffer of its own: copy it
            out = self.program.add(TensorValue(self.program.tensor(v).shape, self.program.tensor(v).dtype,
                                               name=f"{node.name}_out"))
            fmt = self.program.add_scalar("none")
            self.program.instructions.append(
                Instruction("aten::clone.out", [v, fmt, out, out], source_line(node, self.user_file))
            )
            return out
        return v

    def _check_upsample_scales(self, node, op, bound):
        """The upsampling kernels take the source scale from the sizes (in / out); ATen uses 1 / scale
        when scale_factors is given. Those agree whenever out = in * scale exactly (scale_factor=2, ...);
        otherwise say so instead of computing something else."""
        if op._schema.name not in ("aten::upsample_bilinear2d", "aten::upsample_nearest2d"):
            return
        scales = bound.get("scale_factors")
        if not scales:
            return
        ins = node.args[0].meta["val"].shape[2:]
        outs = node.meta["val"].shape[2:]
        for s, i, o in zip(scales, ins, outs):
            if np.float32(1.0 / s) != np.float32(i) / np.float32(o):
                raise UnsupportedOperatorError(
                    f"{op_name(node.target)} with scale_factor {s}: the output size {int(o)} is not "
                    f"{int(i)} x {s}, and the device computes the source scale from the sizes; pass "
                    f"size=... (or recompute_scale_factor=True) to F.interpolate{self._where(node)}"
                )

    def _numbers_as_tensors(self, op, bound: dict, node) -> dict:
        """A Python number where the schema has a Tensor becomes a 0-dim constant (as ExecuTorch's
        scalar_to_tensor), of the result's dtype (a 0-dim tensor promotes as the number does)."""
        val = node.meta.get("val")
        out = dict(bound)
        for a in op._schema.arguments:
            v = bound.get(a.name)
            if str(a.type) == "Tensor" and _is_number(v):
                dtype = val.dtype if isinstance(val, torch.Tensor) and val.dtype != torch.bool else None
                out[a.name] = _Lifted(self.constant_value(torch.tensor(v, dtype=dtype), f"{node.name}_{a.name}"))
        return out

    def _lower_batch_norm_training(self, node):
        """_native_batch_norm_legit_functional (F.batch_norm(training=True) with running stats: batch
        statistics, and the running stats' new values as results 3 and 4) as ExecuTorch runs it:
        _native_batch_norm_legit.out, which updates the running stats in place. They must be state
        tensors (registered buffers the model updates) that nothing else reads; results 3 and 4 are
        then the state tensors themselves (state_update finds them written in place)."""
        op = node.target
        name = "aten::_native_batch_norm_legit.out"
        if self.has_kernel is not None and not self.has_kernel(name):
            raise UnsupportedOperatorError(
                f"{op_name(op)} is not supported on this target: no kernel for {name}{self._where(node)}")
        bound = bind_args(op._schema, node.args, node.kwargs)
        for key in ("running_mean", "running_var"):
            src = bound.get(key)
            if not (isinstance(src, torch.fx.Node) and src.op == "placeholder"
                    and self.env.get(src) in self.program.states and len(src.users) == 1):
                raise UnsupportedOperatorError(
                    f"{op_name(op)} (batch norm with batch statistics): its {key} must be a registered buffer "
                    f"the model updates and that only this batch norm reads{self._where(node)}")
        out_op = aten._native_batch_norm_legit.out
        args = [self.arg_value(bound[a.name], str(a.type)) for a in out_op._schema.arguments if not is_out_arg(a)]
        outs = [self.tensor_value(node, r) for r in node.meta["val"][:3]]
        args += outs + [self.program.add_scalar("tensor_list", outs)]
        self.program.instructions.append(Instruction(name, args, source_line(node, self.user_file)))
        self.env[node] = outs + [self.env[bound["running_mean"]], self.env[bound["running_var"]]]

    def lower_call(self, node):
        op = node.target
        if op is operator.getitem:
            src, i = node.args
            self.env[node] = self.env[src][i]
            return
        if not isinstance(op, torch._ops.OpOverload):
            raise UnsupportedOperatorError(f"{op} is not an ATen operator{self._where(node)}")
        self._check_data_dependent(node)
        if op is aten._native_batch_norm_legit_functional.default:
            self._lower_batch_norm_training(node)
            return
        if op in FREE_VIEWS:
            src = node.args[0]
            val = node.meta["val"]
            if self.cg.is_const(src):  # normally folded already
                self.env[node] = self.constant_value(node.target(self.cg.const(src), *node.args[1:]), node.name)
            else:
                self.env[node] = self.tensor_value(node, val)
                self.aliases[self.env[node]] = self.env[src]
            return
        if op.is_view:
            copy_packet = getattr(aten, f"{op._schema.name.split('::')[1]}_copy", None)
            overload = op._overloadname
            if copy_packet is None or overload not in copy_packet.overloads():
                raise UnsupportedOperatorError(f"{op_name(op)}: view op without a copy variant{self._where(node)}")
            op = getattr(copy_packet, overload)
        bound = bind_args(op._schema, node.args, node.kwargs)
        self._check_upsample_scales(node, op, bound)
        out_op = find_out_variant(op, bound)
        if out_op is None and any(str(a.type) == "Tensor" and _is_number(bound.get(a.name)) for a in op._schema.arguments):
            bound = self._numbers_as_tensors(op, bound, node)  # sub.Tensor(1.0, x): no Scalar overload has it
            out_op = find_out_variant(op, bound)
        if out_op is None:
            raise UnsupportedOperatorError(
                f"{op_name(node.target)} is not supported: no out-variant kernel{self._where(node)}"
            )
        name = op_name(out_op)
        if self.has_kernel is not None and not self.has_kernel(name):
            raise UnsupportedOperatorError(
                f"{op_name(node.target)} is not supported on this target: no kernel for {name}{self._where(node)}"
            )
        val = node.meta.get("val")
        results = list(val) if isinstance(val, (tuple, list)) else [val]
        for r in results:
            if isinstance(r, torch.Tensor):
                self._check_static(node, r)

        args = []
        for a in out_op._schema.arguments:
            if not is_out_arg(a):
                args.append(self.arg_value(bound[a.name], str(a.type)))
        outs = []
        out_args = [a for a in out_op._schema.arguments if is_out_arg(a)]
        result_iter = iter(results)
        for a in out_args:
            if str(a.type).startswith("List["):  # Tensor(a!)[] out
                items = [self.tensor_value(node, r) for r in result_iter]
                outs.extend(items)
                args.append(self.program.add_scalar("tensor_list", items))
            else:
                r = next(result_iter)
                idx = self.tensor_value(node, r)
                outs.append(idx)
                args.append(idx)
        returns = out_op._schema.returns
        if len(returns) == 1 and not str(returns[0].type).startswith("List["):
            args.append(outs[0])
        elif len(returns) > 1:
            args.append(self.program.add_scalar("tensor_list", list(outs)))
        self.program.instructions.append(Instruction(name, args, source_line(node, self.user_file)))
        self.env[node] = outs[0] if not isinstance(val, (tuple, list)) else outs


def export_model(spec: ModelSpec, fuse: bool = True,
                 has_kernel: Optional[Callable[[str], bool]] = None) -> Program:
    """Capture ``spec`` and lower it to an IR Program.

    ``has_kernel(op)`` gets an out-variant name such as ``"aten::relu.out"`` or
    ``"mcu::conv2d.out"`` and says whether the target has a kernel for it."""
    ep = capture(spec)
    cg, user_inputs, kinds, states = to_const_graph(ep)
    run_passes(cg, fuse=fuse)
    out_node = next(n for n in cg.graph.nodes if n.op == "output")
    outs = list(out_node.args[0])  # passes may have replaced output nodes
    user_outputs = [n for n, k in zip(outs, kinds) if k is None]
    mutations = [(k, n) for n, k in zip(outs, kinds) if k is not None]
    if has_kernel is not None and mutations and not has_kernel("aten::clone.out"):
        raise UnsupportedOperatorError("a model with state needs aten::clone.out, which this target lacks")
    program = Fp32Lowering(cg, _user_file(spec), has_kernel).lower(user_inputs, user_outputs, states, mutations)
    program.meta["model"] = spec.name
    program.meta["fused"] = fuse
    return program


class _Method(torch.nn.Module):
    """``owner.attr`` as a module's forward, for torch.export (its weights and buffers are owner's,
    named ``owner.<name>`` in the export)."""

    def __init__(self, owner: torch.nn.Module, attr: str):
        super().__init__()
        self.owner = owner
        self.attr = attr

    def forward(self, *args):
        return getattr(self.owner, self.attr)(*args)


def export_methods(spec: ModelSpec, fuse: bool = True,
                   has_kernel: Optional[Callable[[str], bool]] = None) -> Program:
    """Every method of a model file's ``methods(model)`` (docs/methods.md) as one Program: method 0
    is the Program returned, the others are its ``more_methods``. A state tensor is named by its
    buffer's path in the root module in every method, so methods that update the same buffer share it
    (planner.plan_methods puts it at one offset). A spec without methods gives export_model's Program."""
    if not spec.methods:
        return export_model(spec, fuse=fuse, has_kernel=has_kernel)
    programs = []
    for m in spec.methods:
        sub = ModelSpec(_Method(m.owner, m.attr), tuple(m.example_inputs), name=spec.name, path=spec.path)
        try:
            p = export_model(sub, fuse=fuse, has_kernel=has_kernel)
        except ExportError as e:
            raise type(e)(f"method {m.name}: {e}") from None
        prefix = f"{m.path}." if m.path else ""
        names = [prefix + n[len("owner."):] if n.startswith("owner.") else prefix + n for n in p.state_names]
        for i, n in zip(p.states, names):
            p.tensor(i).name = n
        p.state_names = names
        p.name = m.name
        programs.append(p)
    first = programs[0]
    first.more_methods = programs[1:]
    return first
