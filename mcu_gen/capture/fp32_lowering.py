"""Lowering a captured graph (mcu_gen/capture/export.py) to an IR Program: every op becomes an Instruction
calling the op's out-variant with ExecuTorch's argument convention (schema order, defaults filled in, then
the out tensors, then the returned values); view ops become aliases (``program.meta["aliases"] = {view
value: input value}``) and cost nothing; an op whose output shape depends on the data is refused with what
to write instead."""
from __future__ import annotations

import operator

import numpy as np
import torch
import torch.fx

from mcu_gen.capture import ops as _ops  # noqa: F401  (registers torch.ops.mcu)
from mcu_gen.capture.passes import FREE_VIEWS, ConstGraph
from mcu_gen.capture.schema import (LAYOUTS, MEMORY_FORMATS, UNSUPPORTED_FLOATS, ExportError, Lifted,
                                    UnsupportedOperatorError, bind_args, find_out_variant, is_number, is_out_arg,
                                    op_name, source_line, torch_dtype_name)
from mcu_gen.program.ir import DTYPE_CODES, Instruction, Program, ScalarValue, TensorValue

aten = torch.ops.aten


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
                self._check_real(node, r)

    def _check_real(self, node, val):
        """Refuse complex tensors with what to do instead (complex is out of scope: issue 24)."""
        if val.dtype.is_complex:
            what = f"input {node.name}" if node.op == "placeholder" else f"{self._op_text(node)} (node {node.name})"
            why = node.meta.get("mcu_complex_refusal")
            why = f"; here not, because of {why}" if why else ""
            raise UnsupportedOperatorError(
                f"{what} gives a {str(val.dtype).replace('torch.', '')} tensor {list(val.shape)}: complex tensors "
                f"are out of mcu-gen's scope (its kernels and memory plan hold real float, integer and bool "
                f"tensors). A real FFT (torch.stft, torch.fft.rfft, torch.fft.fft of a real input) runs when its "
                f"complex result reaches only views, sums, real scalings, abs, angle or view_as_real (mcu-gen's "
                f"FFT kernel on (re, im) pairs){why}. Return view_as_real(z), z.abs() or z.angle(), not z"
                f"{self._where(node)}")

    def _check_precision(self, node, dtype, reads_constant: bool = False) -> None:
        """A value the kernels cannot hold: float64, float16, bfloat16 (what the capture folded into constants,
        e.g. a positional table computed in float64 and cast to float32, never gets here)."""
        if dtype not in UNSUPPORTED_FLOATS:
            return
        name = str(dtype).replace("torch.", "")
        if node.op == "call_function":
            what = f"{op_name(node.target)} {'reads' if reads_constant else 'gives'} a {name} " + \
                ("constant" if reads_constant else "tensor")
        else:
            what = f"input {node.name} is a {name} tensor"
        raise ExportError(f"{what}: mcu-gen's kernels compute in float32 (and on integer and "
                          f"bool tensors), a microcontroller has no {name} arithmetic. Convert the model and its "
                          f"inputs to float32 (model.float(), x.float()){self._where(node)}")

    def tensor_value(self, node, val) -> int:
        self._check_static(node, val)
        self._check_real(node, val)
        self._check_precision(node, val.dtype)
        return self.program.add(TensorValue(tuple(val.shape), torch_dtype_name(val.dtype), name=node.name))

    def constant_value(self, tensor: torch.Tensor, name: str) -> int:
        t = tensor.detach().contiguous()
        if t.dtype in UNSUPPORTED_FLOATS:
            raise ExportError(f"constant {name} is {str(t.dtype).replace('torch.', '')}: mcu-gen's kernels compute "
                              f"in float32; convert the model to float32 (model.float())")
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
        if isinstance(value, Lifted):
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
            return p.add_scalar("int", MEMORY_FORMATS[value])
        if isinstance(value, torch.layout):
            return p.add_scalar("int", LAYOUTS[value])
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
                const = self.cg.const(node)
                if const.dtype in UNSUPPORTED_FLOATS and node.users:  # a float16 weight: name what reads it
                    self._check_precision(next(iter(node.users)), const.dtype, reads_constant=True)
                self.env[node] = self.constant_value(const, node.name)
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
            if str(a.type) == "Tensor" and is_number(v):
                dtype = val.dtype if isinstance(val, torch.Tensor) and val.dtype != torch.bool else None
                out[a.name] = Lifted(self.constant_value(torch.tensor(v, dtype=dtype), f"{node.name}_{a.name}"))
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
        if out_op is None and any(str(a.type) == "Tensor" and is_number(bound.get(a.name)) for a in op._schema.arguments):
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
                self._check_real(node, r)

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
