"""Lower a converted PT2E graph (quantize/dequantize nodes, int8 weights) to an IR Program
of ``cortex_m::`` operators (ExecuTorch 1.5's operators.yaml schemas).

    program = lower_quantized(gm, io="float32" | "int8", user_file=None, has_kernel=None)

What it does, per pattern ``dequantize -> op [-> relu/relu6/clamp] -> quantize``:
- conv2d -> cortex_m::quantized_conv2d (weight OHWI) or, for groups == in_channels > 1,
  cortex_m::quantized_depthwise_conv2d (weight IHWO). A first conv with one input channel
  is a regular conv.
- linear -> cortex_m::quantized_linear (weight [out, in], int32 bias, per-tensor multiplier).
  A flatten of a channels-last tensor feeding it costs nothing: the weight columns are
  permuted ahead of time to read the input in NHWC order.
- add -> cortex_m::quantized_add; max/avg pool -> cortex_m::quantized_max/avg_pool2d;
  softmax (last dim) -> cortex_m::softmax; flatten/view/reshape -> free views.
- ReLU / ReLU6 / clamp -> activation_min / activation_max of the op before it.
- Requantization multipliers (Q31) and shifts are computed here, per output channel.
- int8 activations with 4 dims are channels-last (dim_order 0,2,3,1).
- Graph inputs/outputs: cortex_m::quantize_per_tensor / dequantize_per_tensor at the
  edges (io="float32"), or int8 tensors (io="int8").
- Any other op runs in fp32 (the target's portable kernel) between dequantize and
  quantize; ``program.meta["fp32_fallback"]`` lists each with the reason.
"""
from __future__ import annotations

import math
import operator
from typing import Callable, Optional

import numpy as np
import torch
import torch.fx
import torchao.quantization.pt2e  # noqa: F401  (registers the quantized_decomposed operators)

from mcu_gen.capture.export import Fp32Lowering, UnsupportedOperatorError, op_name, source_line, torch_dtype_name
from mcu_gen.program.ir import DTYPE_CODES, Instruction, Program, TensorValue
from mcu_gen.quantize.islands import lower_island
from mcu_gen.quantize.layouts import Int8Layouts, is_row_major
from mcu_gen.quantize.int8_common import (  # noqa: F401  (re-exported: lowering's public names)
    ACTIVATIONS, DQ_CHANNEL_OPS, DQ_OPS, INT8_MAX, INT8_MIN, LUT_OPS, NHWC, NOOP_OPS, PERMUTE_OPS, Q_OPS,
    SOFTMAX_INPUT_INTEGER_BITS, VIEW_OPS, QuantLoweringError, activation_bounds, activation_lut, add_params, aten,
    conv_scratch_bytes, get_attr_value, is_lut_node, nontrivial_nhwc, pool_geometry, qd, quantize_multiplier,
    shape_of, softmax_params)
from mcu_gen.quantize import int8_ops


ASSERT_OPS = {aten._assert_tensor_metadata.default, aten._assert_scalar.default}


class _ConstAdapter:
    """What export.Fp32Lowering needs of a ConstGraph: constants by get_attr node."""

    def __init__(self, gm):
        self.gm = gm

    def const(self, node):
        if isinstance(node, torch.fx.Node) and node.op == "get_attr":
            return get_attr_value(self.gm, node)
        return None

    def is_const(self, node) -> bool:
        return self.const(node) is not None


class QuantLowering(Int8Layouts):
    def __init__(self, gm: torch.fx.GraphModule, io: str = "float32", user_file=None,
                 has_kernel: Optional[Callable[[str], bool]] = None):
        if io not in ("float32", "int8"):
            raise ValueError(f"io must be 'float32' or 'int8', not {io!r}")
        self.gm = gm
        self.io = io
        self.user_file = user_file
        self.has_kernel = has_kernel
        self.fp = Fp32Lowering(_ConstAdapter(gm), user_file, has_kernel)  # fp32 fallback ops
        self.program: Program = self.fp.program
        self.aliases = self.fp.aliases
        self.q = {}  # fx node (quantize or activation dequantize) -> int8 value
        self.f = {}  # (fx node, contiguous) -> fp32 value
        self.done = set()  # nodes lowered as part of a pattern
        self.nhwc_flat = {}  # value -> (C, H, W): a flatten that kept NHWC byte order
        self.fallback = []
        self.complex_pending = []  # fp32 island nodes with a complex result, lowered with their real consumer
        self.cmsis_scratch = False  # the portable cortex_m kernels take no scratch
        self.results = {}  # fx node name -> (int8 value, op, source): for the per-operator error

    # -- values ----------------------------------------------------------------------------------
    def int8_tensor(self, shape, scale, zp, dim_order=None, name="") -> int:
        if dim_order is None and nontrivial_nhwc(shape):
            dim_order = NHWC
        elif dim_order is None and len(shape) == 4:
            dim_order = NHWC
        return self.program.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, name=name,
                                            scale=float(scale), zero_point=int(zp)))

    def constant(self, array: np.ndarray, dtype: str, name: str) -> int:
        array = np.asarray(array.astype(dtype), order="C")
        return self.program.add(TensorValue(array.shape, dtype, data=array, name=name))

    def scalar(self, kind, value=None) -> int:
        return self.program.add_scalar(kind, value)

    def alias(self, src: int, shape, dim_order=None, name="") -> int:
        """A view of src's bytes as `shape` in `dim_order`. A view of a constant (an index tensor torch.export
        folded, such as nanoGPT's arange of positions) is a constant with the same bytes, which the program
        stores once: the planner's views live in the arena."""
        t = self.program.tensor(src)
        data = None if t.data is None else np.asarray(t.data, order="C").reshape(-1)
        v = self.program.add(TensorValue(tuple(shape), t.dtype, dim_order=dim_order, name=name, data=data,
                                         scale=t.scale, zero_point=t.zero_point))
        if data is None:
            self.aliases[v] = src
        return v

    def emit(self, op: str, args: list, out: int, node=None) -> None:
        src = source_line(node, self.user_file) if node is not None else ""
        self.program.instructions.append(Instruction(op, list(args) + [out, out], src))

    def scratch(self, nbytes: int, name: str) -> int:
        """The schema's scratch tensor: empty unless the kernels read one (CMSIS-NN backed kernels)."""
        return self.program.add(TensorValue((nbytes if self.cmsis_scratch else 0,), "uint8", name=name))

    def _quant_args(self, scale, zp) -> list:
        return [self.scalar("float", float(scale)), self.scalar("int", int(zp)), self.scalar("int", INT8_MIN),
                self.scalar("int", INT8_MAX), self.scalar("int", DTYPE_CODES["int8"])]

    def fp32_of(self, node, contiguous: bool) -> int:
        """The fp32 value of an fx node (dequantizing an int8 activation if needed)."""
        key = (node, contiguous)
        if key in self.f:
            return self.f[key]
        if node in self.q:  # an activation dequantize node
            v = self.q[node]
            if contiguous:
                v = self.to_nchw(v, node)
            t = self.program.tensor(v)
            out = self.program.add(TensorValue(t.shape, "float32", dim_order=t.dim_order, name=node.name))
            self.emit("cortex_m::dequantize_per_tensor.out", [v] + self._quant_args(t.scale, t.zero_point), out,
                       node)
            self.f[key] = out
            return out
        if (node, not contiguous) in self.f:
            v = self.f[(node, not contiguous)]
            t = self.program.tensor(v)
            if not nontrivial_nhwc(t.shape):
                return v
            raise QuantLoweringError(f"{node.name}: an fp32 channels-last tensor feeds an fp32 operator")
        raise QuantLoweringError(f"{node.name}: no fp32 value")

    def quant_of(self, node) -> Optional[int]:
        """The int8 value behind an activation dequantize node, else None."""
        return self.q.get(node)

    def operand_of(self, node) -> Optional[int]:
        """quant_of, or a constant quantized per tensor (a learned position embedding added to the tokens) as an
        int8 constant with its scale and zero point, else None."""
        v = self.quant_of(node)
        if v is not None:
            return v
        wq = self.weight(node)
        if wq is None or node.target in DQ_CHANNEL_OPS:
            return None
        w, scales, zps = wq
        if nontrivial_nhwc(w.shape):  # (4-D activations are channels-last: such a constant stays an fp32 island)
            return None
        return self.program.add(TensorValue(w.shape, "int8", data=np.ascontiguousarray(w), name=node.name,
                                            scale=float(scales[0]), zero_point=int(zps[0])))

    # -- weights ------------------------------------------------------------------------------------
    def weight(self, node, axis: int = 0):
        """(int8 array, per-channel scales array, zero points) of a dequantized constant weight
        (per channel along ``axis``, or per tensor), else None."""
        if not isinstance(node, torch.fx.Node) or node.op != "call_function":
            return None
        if node.target in DQ_CHANNEL_OPS:
            w, s, z, w_axis = node.args[0], node.args[1], node.args[2], node.args[3]
            if w.op != "get_attr" or w_axis != axis:
                return None
            scales = get_attr_value(self.gm, s).double().numpy() if isinstance(s, torch.fx.Node) else np.asarray(s)
            zps = get_attr_value(self.gm, z).numpy() if isinstance(z, torch.fx.Node) else np.asarray(z)
            return get_attr_value(self.gm, w).numpy().astype(np.int8), np.asarray(scales, np.float64), np.asarray(zps)
        if node.target in DQ_OPS and node.args[0].op == "get_attr":
            w = get_attr_value(self.gm, node.args[0]).numpy().astype(np.int8)
            n = w.shape[axis] if w.ndim > axis else 1  # a 0-dim constant (a scalar operand) is one channel
            return w, np.full(n, float(node.args[1])), np.full(n, int(node.args[2]))
        return None

    def bias(self, node, in_scale, w_scales, name) -> Optional[int]:
        if node is None:
            return None
        if not (isinstance(node, torch.fx.Node) and node.op == "get_attr"):
            raise QuantLoweringError("bias is not a constant")
        b = get_attr_value(self.gm, node).double().numpy()
        q = np.round(b / (in_scale * w_scales))
        q = np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)
        return self.constant(q, "int32", name)

    # -- pattern helpers ------------------------------------------------------------------------------
    def output_quant(self, node):
        """(quantize node, fused activation node or None) if node's result is quantized right away."""
        users = list(node.users)
        act = None
        if len(users) == 1 and users[0].op == "call_function" and users[0].target in ACTIVATIONS \
                and users[0].args[0] is node and all(not isinstance(a, torch.fx.Node) for a in users[0].args[1:]):
            act = users[0]
            users = list(act.users)
        if len(users) == 1 and users[0].op == "call_function" and users[0].target in Q_OPS:
            return users[0], act
        return None

    def act_range(self, act, scale, zp) -> tuple[int, int]:
        lo, hi = INT8_MIN, INT8_MAX
        if act is not None:
            a, b = activation_bounds(act)
            if math.isfinite(a):
                lo = max(lo, min(hi, int(zp + np.round(a / scale))))
            if math.isfinite(b):
                hi = min(hi, max(INT8_MIN, int(zp + np.round(b / scale))))
        return lo, hi

    def finish(self, node, qnode, act, out) -> None:
        self.q[qnode] = out
        last = act if act is not None else node
        self.results[last.name] = (out, op_name(node.target) if isinstance(node.target, torch._ops.OpOverload)
                                   else str(node.target), source_line(node, self.user_file))
        self.done.update({node, qnode} | ({act} if act is not None else set()))

    def plain_of(self, node) -> Optional[int]:
        """The value of an fx node that is not quantized (int64 ids, a bool mask, an fp32 island's
        result), else None."""
        if node in self.fp.env:
            return self.fp.env[node]
        return self.f.get((node, True))

    def finish_plain(self, node, out: int) -> None:
        """node's result is `out`, a value that is not quantized (int64 indices, a bool mask)."""
        self.f[(node, True)] = self.f[(node, False)] = self.fp.env[node] = out
        self.done.add(node)  # (not in self.results: those are int8 values compared with fp32 by value)

    @staticmethod
    def qparams(qnode):
        return float(qnode.args[1]), int(qnode.args[2])

    # -- int8 rules -------------------------------------------------------------------------------------
    def try_int8(self, node) -> Optional[str]:
        """Lower node as an int8 pattern; returns None on success, else the reason it can't be."""
        t = node.target
        if t in NOOP_OPS:
            return self._noop(node)
        if t in VIEW_OPS:
            return self._view(node)
        oq = self.output_quant(node)
        h = int8_ops.find(node)  # the operator's handler (mcu_gen/quantize/int8_ops/)
        if oq is None:
            if h is not None and h.plain:  # int64 / bool results (indices, masks) or a tuple of results
                return h.fn(self, node, None, None)
            return "its result is not quantized (the quantizer left it in fp32)"
        qnode, act = oq
        if h is not None:
            return h.fn(self, node, qnode, act)
        return f"no int8 kernel for {op_name(t) if isinstance(t, torch._ops.OpOverload) else t}"

    def _noop(self, node):
        x = node.args[0]
        if node.target is aten.dropout.default and node.args[2]:
            return "dropout in training mode"
        if x in self.q:
            self.q[node] = self.q[x]
            self.done.add(node)
            return None
        return "input is not int8"

    def _view(self, node):
        x = node.args[0]
        v = self.quant_of(x)
        if v is None:
            return "input is not int8"
        users = list(node.users)
        if len(users) != 1 or users[0].target not in Q_OPS:
            return "result is not quantized"
        qnode = users[0]
        t = self.program.tensor(v)
        shape = shape_of(node)
        if self.qparams(qnode) != (t.scale, t.zero_point):
            return "a view that changes quantization parameters"
        if len(t.shape) == 4 and t.dim_order == NHWC and nontrivial_nhwc(t.shape):
            if node.target is aten.flatten.using_ints and len(shape) == 2 and self._only_int8_linears(qnode):
                out = self.alias(v, shape, None, node.name)
                self.nhwc_flat[out] = t.shape[1:]
                self.finish(node, qnode, None, out)
                return None
        out = self.view_of(v, shape, node.name, node, any_order=self._only_relaid(qnode))
        if out is not None:
            self.finish(node, qnode, None, out)
            return None
        v = self.contig(v, node)
        dim_order = NHWC if len(shape) == 4 else None
        out = self.alias(v, shape, dim_order, node.name)
        if len(shape) == 4 and nontrivial_nhwc(shape):
            # a view producing a 4-D tensor from NCHW-ordered bytes: make it channels-last
            out = self.alias(v, shape, None, node.name + "_nchw")
            out = self.to_nhwc(out, node)
        self.finish(node, qnode, None, out)
        return None

    def _only_relaid(self, node) -> bool:
        """True when node's int8 result is only viewed or permuted again (through its dequantize nodes and
        no-op copies): those take any memory order, so a view may leave the bytes in theirs."""
        for u in node.users:
            if u.target in DQ_OPS or u.target in NOOP_OPS:
                if not self._only_relaid(u):
                    return False
            elif u.target not in VIEW_OPS and u.target not in PERMUTE_OPS:
                return False
        return True

    def _only_int8_linears(self, qnode) -> bool:
        for dq in qnode.users:
            if dq.target not in DQ_OPS:
                return False
            for u in dq.users:
                if u.target is not aten.linear.default or u.args[0] is not dq or self.weight(u.args[1]) is None:
                    return False
                if self.output_quant(u) is None:
                    return False
        return True

    def requantize(self, v: int, scale: float, zp: int, node=None) -> int:
        """v with quantization (scale, zp): itself, or a 256-entry table of dequantize -> quantize."""
        t = self.program.tensor(v)
        if (t.scale, t.zero_point) == (float(scale), int(zp)):
            return v
        lut = activation_lut(lambda x: x, (), {}, t.scale, t.zero_point, scale, zp)
        out = self.int8_tensor(t.shape, scale, zp, t.dim_order, t.name + "_rq")
        self.emit("cortex_m::quantized_activation.out", [v, self.constant(lut, "int8", t.name + "_rq_lut")], out,
                   node)
        return out

    # -- fp32 fallback -----------------------------------------------------------------------------------
    def fallback_op(self, node, reason: str) -> None:
        """An fp32 island: node's int8 inputs dequantized, node decomposed to core ATen and run by
        the target's fp32 kernels (mcu_gen/quantize/islands.py); quantize nodes after it requantize."""
        if node.target is operator.getitem:
            self.fp.lower_call(node)
            self.f[(node, True)] = self.fp.env[node]
            return
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and val.dtype.is_complex:
            # (stft, rfft): no complex tensor in the program; one island with the ops that make it real
            self.complex_pending.append(node)
            return
        chain = self._complex_chain(node)
        first_ins, first_val = len(self.program.instructions), len(self.program.values)
        activations, constants = {}, {}
        for a in [a for n in chain for a in n.all_input_nodes if a not in chain]:
            if a.op == "get_attr":
                constants[a] = get_attr_value(self.gm, a)
            elif self.weight(a) is not None:
                constants[a] = a.target(*[(get_attr_value(self.gm, x) if isinstance(x, torch.fx.Node) else x)
                                          for x in a.args])
            elif a in self.fp.env:
                activations[a] = self.fp.env[a]
            else:
                activations[a] = self.fp32_of(a, contiguous=True)
        out = lower_island(self.fp, chain, activations, constants)
        self.fp.env[node] = out
        self.f[(node, True)] = out
        if node.target in VIEW_OPS or node.target in NOOP_OPS:
            return
        if len(self.program.instructions) == first_ins:
            return  # folded to a constant at build time (zeros, full, arange of constants): nothing runs in fp32
        new_values = [v for v in self.program.values[first_val:] if isinstance(v, TensorValue) and not v.is_constant]
        self.fallback.append({
            "op": " -> ".join(op_name(n.target) if isinstance(n.target, torch._ops.OpOverload) else str(n.target)
                              for n in chain),
            "reason": reason, "source": source_line(node, self.user_file),
            "kernels": [ins.op for ins in self.program.instructions[first_ins:]],
            "fp32_bytes": sum(v.nbytes for v in new_values if v.dtype == "float32"),
            "constant_bytes": sum(v.nbytes for v in self.program.values[first_val:]
                                  if isinstance(v, TensorValue) and v.is_constant)})

    def _complex_chain(self, node) -> list:
        """The pending complex-valued island nodes `node` reads (directly or through each other), in
        graph order, then `node`: one island computes them all (capture/complex_to_real.py)."""
        need, todo = set(), [a for a in node.all_input_nodes if a in self.complex_pending]
        while todo:
            a = todo.pop()
            if a not in need:
                need.add(a)
                todo += [b for b in a.all_input_nodes if b in self.complex_pending]
        return [n for n in self.complex_pending if n in need] + [node]

    def quantize_node(self, node) -> None:
        x = node.args[0]
        scale, zp = self.qparams(node)
        if x.op == "placeholder" and self.io == "int8" and (x, True) not in self.f:  # (an fp32 state: quantized here)
            raise AssertionError("handled with the inputs")
        if x in self.q and (x, True) not in self.f and (x, False) not in self.f:
            self.q[node] = self.requantize(self.q[x], scale, zp, node)  # int8 -> int8 by a table
            return
        v = self.fp32_of(x, contiguous=(x, True) in self.f or x.op != "placeholder")
        t = self.program.tensor(v)
        out = self.program.add(TensorValue(t.shape, "int8", dim_order=t.dim_order, name=node.name, scale=scale,
                                           zero_point=zp))
        self.emit("cortex_m::quantize_per_tensor.out", [v] + self._quant_args(scale, zp), out, node)
        self.q[node] = self.to_nhwc(out, node) if len(t.shape) == 4 and not self._only_int8_linears(node) else out

    # -- driver -------------------------------------------------------------------------------------------
    def lower(self) -> Program:
        g = self.gm.graph
        states = {st["input"]: st for st in self.gm.meta.get("mcu_states", [])}
        for node in g.nodes:
            if node.op == "placeholder" and node.name not in states:
                self._input(node)
        for node in g.nodes:
            if node.op == "placeholder" and node.name in states:
                self._state_input(node, states[node.name])
        for node in g.nodes:
            if node.op != "call_function" or node in self.done:
                continue
            t = node.target
            if t in Q_OPS:
                if node not in self.q:
                    self.quantize_node(node)
                continue
            if t in DQ_OPS:
                if node.args[0].op == "get_attr":
                    continue  # a constant weight, read by its consumer
                if node.args[0] not in self.q:
                    raise QuantLoweringError(f"{node.name}: dequantize of a tensor that is not int8")
                self.q[node] = self.q[node.args[0]]
                continue
            if t in DQ_CHANNEL_OPS or t in ASSERT_OPS:
                continue  # (asserts: checks of dtypes and shapes that export proved; nothing to run)
            if any(a in self.complex_pending for a in node.all_input_nodes):
                reason = "reads a complex tensor (an fp32 island with the op that makes it)"
            else:
                reason = self.try_int8(node)
            if reason is not None:
                self.fallback_op(node, reason)
        out_node = next(n for n in g.nodes if n.op == "output")
        outs = out_node.args[0]
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        updates = outs[len(outs) - len(states):] if states else []
        for o in outs[:len(outs) - len(updates)]:
            self.program.outputs.append(self._output(o))
        for v, o in zip(list(self.program.states), updates):
            self._state_update(v, o)
        self.program.meta["aliases"] = dict(self.aliases)
        self.program.meta["fp32_fallback"] = self.fallback
        self.program.meta["int8_results"] = self.results
        self.program.meta["quantized"] = "int8"
        self.program.meta["io"] = self.io
        return self.program

    def _input(self, node) -> None:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise QuantLoweringError(f"input {node.name}: only tensor inputs are supported")
        shape = tuple(val.shape)
        users = list(node.users)
        quantized = bool(users) and all(u.op == "call_function" and u.target in Q_OPS for u in users)
        if not val.dtype.is_floating_point:  # token ids, indices, masks: stay integer / bool (never quantized)
            v = self.program.add(TensorValue(shape, torch_dtype_name(val.dtype), name=node.name))
            self.f[(node, True)] = self.f[(node, False)] = v
            self.fp.env[node] = v
        elif self.io == "int8" and not users:  # an input forward ignores: int8 like the others, its values unread
            v = self.int8_tensor(shape, 1.0, 0, NHWC if len(shape) == 4 else None, node.name)
        elif self.io == "int8":
            params = {self.qparams(u) for u in users} if quantized else set()
            if len(params) != 1:
                raise QuantLoweringError(f"input {node.name}: --io int8 needs the input to be quantized once "
                                         f"(it feeds {', '.join(u.name for u in users)})")
            scale, zp = params.pop()
            v = self.int8_tensor(shape, scale, zp, NHWC if len(shape) == 4 else None, node.name)
            for u in users:
                self.q[u] = v
        else:
            dim_order = NHWC if (quantized and len(shape) == 4) else None
            v = self.program.add(TensorValue(shape, "float32", dim_order=dim_order, name=node.name))
            self.f[(node, dim_order is None)] = v
            if dim_order is None or not nontrivial_nhwc(shape):
                self.f[(node, True)] = v
                self.f[(node, False)] = v
            self.fp.env[node] = v
        self.program.inputs.append(v)

    # -- state (mutable buffers) ---------------------------------------------------------------------
    def _state_input(self, node, st) -> None:
        """A state tensor: int8 with the one scale and zero point every reader quantizes it with
        (capture.share_state_observers makes them one), its initial value quantized the same way;
        fp32 when something reads it in fp32 (an island) or nothing quantizes it."""
        from mcu_gen.quantize.arith import quantize_f32

        init = st["init"].detach().contiguous().numpy()
        shape = tuple(init.shape)
        users = list(node.users)
        params = {self.qparams(u) for u in users if u.op == "call_function" and u.target in Q_OPS}
        int8 = bool(users) and len(params) == 1 and all(u.op == "call_function" and u.target in Q_OPS for u in users)
        if int8:
            scale, zp = params.pop()
            v = self.int8_tensor(shape, scale, zp, NHWC if len(shape) == 4 else None, st["name"])
            t = self.program.tensor(v)
            q = np.clip(quantize_f32(init.astype(np.float32), scale, zp), INT8_MIN, INT8_MAX).astype(np.int8)
            t.init = np.asarray(q.transpose(t.dim_order) if t.dim_order else q, order="C")
            for u in users:
                self.q[u] = v
                self.done.add(u)
        else:  # kept as the buffer is (fp32, or an integer counter the quantizer leaves alone)
            v = self.program.add(TensorValue(shape, torch_dtype_name(st["init"].dtype), name=st["name"]))
            self.program.tensor(v).init = np.asarray(init, order="C")
            self.f[(node, True)] = v
            if not nontrivial_nhwc(shape):
                self.f[(node, False)] = v
            self.fp.env[node] = v
        self.program.states.append(v)
        self.program.state_names.append(st["name"])

    def _state_update(self, state: int, node) -> None:
        """The end of a run writes the state's new value into it: the instruction computing it
        writes the state itself when it can (export.Fp32Lowering._write_in_place), else a copy. An
        int8 state takes an int8 value with its own quantization (a requantization table if the
        value's differs, which share_state_observers avoids), or quantizes an fp32 one."""
        t = self.program.tensor(state)
        if not isinstance(node, torch.fx.Node):
            raise QuantLoweringError(f"the new value of buffer {t.name} is not a tensor")
        if t.dtype == "int8":
            same = [u for u in node.users if u in self.q and u.target in Q_OPS
                    and self.qparams(u) == (t.scale, t.zero_point)]
            if node in self.q or same:  # int8 already (an fp32 value that another reader quantized the same way)
                src = self.requantize(self.q[node if node in self.q else same[0]], t.scale, t.zero_point, node)
                src = self.to_nhwc(src, node) if len(t.shape) == 4 else self.contig(src, node)
            else:
                f = self.fp32_of(node, contiguous=True)
                ft = self.program.tensor(f)
                src = self.program.add(TensorValue(ft.shape, "int8", name=t.name + "_new", scale=t.scale,
                                                   zero_point=t.zero_point))
                self.emit("cortex_m::quantize_per_tensor.out", [f] + self._quant_args(t.scale, t.zero_point), src,
                           node)
        else:
            src = self.fp32_of(node, contiguous=True)
        root = self.fp.root(src)
        if root == state:
            return
        s, r = self.program.tensor(src), self.program.tensor(root)
        if (root != src and (r.shape, r.dtype) == (s.shape, s.dtype) and is_row_major(r)
                and is_row_major(s)):
            src, s = root, r  # a view with the same bytes and shape: its source can write the state
        if s.shape != t.shape or s.dtype != t.dtype or (s.dim_order or None) != (t.dim_order or None):
            raise QuantLoweringError(f"buffer {t.name}: the model writes a {s.dtype} {list(s.shape)} value into a "
                                     f"{t.dtype} {list(t.shape)} buffer")
        if self.fp.write_in_place(state, src):
            return
        self.emit("aten::clone.out", [src, self.scalar("none")], state, node)

    def _output(self, node) -> int:
        if self.io == "int8" and node in self.q:
            v = self.q[node]
            if len(self.program.tensor(v).shape) != 4:
                v = self.contig(v)
        elif node in self.q:
            v = self.fp32_of(node, contiguous=len(self.program.tensor(self.q[node]).shape) != 4)
        elif (node, True) in self.f:
            v = self.f[(node, True)]
        elif isinstance(node, torch.fx.Node) and node.op == "get_attr":  # a buffer returned as it is
            v = self.fp.constant_value(get_attr_value(self.gm, node), node.name)
        elif node in self.complex_pending:
            raise UnsupportedOperatorError(
                f"{op_name(node.target)} (node {node.name}) gives a complex tensor that the model returns: complex "
                f"tensors are out of mcu-gen's scope; return view_as_real(z), z.abs() or z.angle() instead"
                f"\n  at {source_line(node, self.user_file)}")
        else:
            raise QuantLoweringError(f"output {node}: not produced by the program")
        root = self.fp.root(v)
        if root in self.program.inputs or self.program.tensor(root).is_constant or v in self.program.outputs:
            # the output must be a buffer of its own (clone(x), x.view(...), zeros_like(x): an input, a
            # view of one or a constant folded at build time; or another output): copy it
            t = self.program.tensor(v)
            out = self.program.add(TensorValue(t.shape, t.dtype, dim_order=t.dim_order, name=f"{node.name}_out",
                                               scale=t.scale, zero_point=t.zero_point))
            self.emit("aten::clone.out", [v, self.scalar("none")], out, node)
            return out
        return v


def lower_quantized(gm: torch.fx.GraphModule, io: str = "float32", user_file=None,
                    has_kernel: Optional[Callable[[str], bool]] = None) -> Program:
    """Lower a converted PT2E GraphModule to an int8 IR Program (unplanned)."""
    return QuantLowering(gm, io, user_file, has_kernel).lower()
