"""mcu-gen's int8 Quantizer for torchao's PT2E flow (the TFLite / CMSIS-NN int8 spec).

    gm = capture_for_quantization(module, example_inputs)   # quantize/capture.py: torch.export, BN folded
    prepared = prepare_pt2e(gm, McuQuantizer())              # or prepare_qat_pt2e(gm, McuQuantizer(qat=True))
    for inputs in calibration: prepared(*inputs)
    converted = convert_pt2e(prepared)                       # quantize/dequantize nodes, int8 weights

The spec:
- activations: int8, asymmetric, per tensor, range [-128, 127];
- convolution weights: int8, symmetric, per output channel, range [-127, 127];
- linear weights: int8, symmetric, per tensor (cortex_m::quantized_linear applies one
  multiplier to all outputs, as CMSIS-NN's arm_fully_connected_s8 does);
- bias: left in float here; the lowering stores it as int32 with scale s_in * s_w;
- ReLU / ReLU6 / clamp after a conv, linear or add are not observed separately: the
  op's output is quantized after the activation, which the lowering fuses as
  activation_min / activation_max;
- max pool, average pool, slices and view-like ops share their input's parameters, cat
  shares one set over all its inputs and its output, softmax outputs scale 1/256,
  zero point -128.
Ops not listed stay unannotated, so they run in fp32 between dequantize/quantize.
"""
from __future__ import annotations

import operator

import torch
import torch.fx
from torchao.quantization.pt2e import (
    FakeQuantize,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantizer import (
    FixedQParamsQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

from mcu_gen.quantize.int8_common import pad_mode_and_value
from mcu_gen.quantize.observers import DEFAULT_METHOD, EPS, CalibrationObserver

aten = torch.ops.aten

SOFTMAX_SCALE = 1.0 / 256.0
SOFTMAX_ZERO_POINT = -128

CONV_OPS = {aten.conv2d.default, aten.conv1d.default, aten.conv2d.padding, aten.conv1d.padding}
CONV_TRANSPOSE_OPS = {aten.conv_transpose2d.input}
MATMUL_OPS = {aten.matmul.default, aten.bmm.default, aten.mm.default}
LINEAR_OPS = {aten.linear.default}
ADD_OPS = {aten.add.Tensor, aten.sub.Tensor}
MUL_OPS = {aten.mul.Tensor}
# Ops whose output keeps the input's quantization parameters.
SHARED_OPS = {
    aten.max_pool2d.default,
    aten.avg_pool2d.default,
    aten.adaptive_avg_pool2d.default,
    aten.max_pool1d.default,
    aten.avg_pool1d.default,
    aten.adaptive_avg_pool1d.default,
    aten.mean.dim,
    aten.flatten.using_ints,
    aten.unflatten.int,
    aten.view.default,
    aten.reshape.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.unsqueeze.default,
    aten.transpose.int,
    aten.permute.default,
    aten.t.default,
    aten.upsample_nearest2d.vec,
    aten.upsample_nearest2d.default,
    aten.upsample_bilinear2d.vec,  # (interpolation stays within the input's range)
    aten.slice.Tensor,
    aten.expand.default,
    aten.repeat.default,
    aten.pad.default,  # when its new elements are 0 or input copies (_pad_keeps_range)
    aten.constant_pad_nd.default,
    # ops that pick part of their input: the picked codes carry all there is; another scale could only
    # round them again (measured: data_movement's rel RMS 0.0152 -> 0.0116 against an observer of their own)
    aten.select.int,
    aten.amax.default,
    aten.amin.default,
}
PAD_OPS = {aten.pad.default, aten.constant_pad_nd.default}
# Sums over dims: an output observer of their own (int32 sums of the codes, requantized: int8_ops/pool.py).
SUM_OPS = {aten.sum.dim_IntList, aten.sum.default}
# PReLU with a constant slope per channel (or one): an output observer of its own (int8_ops/elementwise.py).
PRELU_OPS = {aten.prelu.default}
# A table lookup: the table (a constant) is quantized per tensor, asymmetric; the rows it returns share its parameters.
EMBEDDING_OPS = {aten.embedding.default}
# (values, indices) of the largest / smallest elements: the values share the input's parameters (picked, exact).
RANK_OPS = {aten.max.dim, aten.min.dim, aten.topk.default}
# Ops that cut their input into parts (a tuple, read by getitem): the parts share the input's parameters (byte copies).
SPLIT_OPS = {aten.chunk.default, aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int}
ARG_OPS = {aten.argmax.default, aten.argmin.default}  # int64 results of int8 codes: the input quantized
_CMP = ("eq", "ne", "lt", "le", "gt", "ge")
SCALAR_COMPARE_OPS = {getattr(aten, n).Scalar for n in _CMP}  # bool results of int8 codes
TENSOR_COMPARE_OPS = {getattr(aten, n).Tensor for n in _CMP}  # the second operand shares the first's parameters
WHERE_OPS = {aten.where.self}  # int8 operands (each its own), output observer of its own
CAT_OPS = {aten.cat.default}
SOFTMAX_OPS = {aten.softmax.int, aten._softmax.default}
ACTIVATIONS = {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default,
               aten.hardtanh_.default, aten.clamp.default}


def _pad_keeps_range(node) -> bool:
    """A pad whose new elements are 0 (constant 0) or copies of the input (reflect, replicate):
    the input's quantization parameters fit the output exactly."""
    mode, value = pad_mode_and_value(node)
    return (mode == "constant" and value == 0.0) or mode in ("reflect", "replicate")


def activation_spec(qat: bool = False, method: str = DEFAULT_METHOD) -> QuantizationSpec:
    """PTQ: a CalibrationObserver (all calibration methods at once, `method` chosen; observers.py)."""
    if qat:
        ctr = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                                     dtype=torch.int8, qscheme=torch.per_tensor_affine, eps=EPS)
    else:
        ctr = CalibrationObserver.with_args(eps=EPS, method=method)
    return QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
                            is_dynamic=False, observer_or_fake_quant_ctr=ctr)


def conv_weight_spec(qat: bool = False, ch_axis: int = 0) -> QuantizationSpec:
    if qat:
        ctr = FakeQuantize.with_args(observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
                                     dtype=torch.int8, qscheme=torch.per_channel_symmetric, ch_axis=ch_axis)
    else:
        ctr = PerChannelMinMaxObserver.with_args(ch_axis=ch_axis)
    return QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric,
                            ch_axis=ch_axis, is_dynamic=False, observer_or_fake_quant_ctr=ctr)


def linear_weight_spec(qat: bool = False) -> QuantizationSpec:
    if qat:
        ctr = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127,
                                     dtype=torch.int8, qscheme=torch.per_tensor_symmetric)
    else:
        ctr = MinMaxObserver.with_args()
    return QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_tensor_symmetric,
                            is_dynamic=False, observer_or_fake_quant_ctr=ctr)


def table_spec(qat: bool = False) -> QuantizationSpec:
    """An embedding table: int8, asymmetric per tensor (its rows are activations), min/max of the table."""
    if qat:
        ctr = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                                     dtype=torch.int8, qscheme=torch.per_tensor_affine, eps=EPS)
    else:
        ctr = MinMaxObserver.with_args(eps=EPS)
    return QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
                            is_dynamic=False, observer_or_fake_quant_ctr=ctr)


SOFTMAX_SPEC = FixedQParamsQuantizationSpec(dtype=torch.int8, scale=SOFTMAX_SCALE, zero_point=SOFTMAX_ZERO_POINT,
                                            quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine)


def is_lut_node(node) -> bool:
    from mcu_gen.quantize.lowering import is_lut_node as lut

    return lut(node)


def _annotated(node: torch.fx.Node) -> bool:
    a = node.meta.get("quantization_annotation")
    return a is not None and a._annotated


def _input_spec(node, x):
    """The spec node's annotation gives its input x, or None."""
    a = node.meta.get("quantization_annotation")
    return a.input_qspec_map.get(x) if a is not None else None


def _annotate(node, inputs: dict, output) -> None:
    node.meta["quantization_annotation"] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True)


def _is_fusable_activation(node) -> bool:
    if not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.target not in ACTIVATIONS:
        return False
    return all(not isinstance(a, torch.fx.Node) for a in node.args[1:])


def _float_only(node: torch.fx.Node) -> bool:
    """True unless node computes on or produces integer tensors (a step counter, indices) or float64 ones (a
    positional table computed in float64, folded later): only float32 is quantized."""
    vals = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes if a.op != "get_attr"]
    return all(v.dtype == torch.float32 for v in vals if isinstance(v, torch.Tensor))


def _float_activation(node) -> bool:
    """node is a computed float32 tensor (not a constant, not a number)."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return node.op != "get_attr" if isinstance(val, torch.Tensor) and val.dtype == torch.float32 else False


def _is_constant(node) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "get_attr"


def _fused_activation(node: torch.fx.Node):
    """The ReLU / ReLU6 / clamp that is ``node``'s only user, if any."""
    users = list(node.users)
    if len(users) == 1 and _is_fusable_activation(users[0]) and users[0].args[0] is node:
        return users[0]
    return None


class McuQuantizer(Quantizer):
    """Annotates a torch.export graph (pre-dispatch ATen) for mcu-gen's int8 lowering."""

    def __init__(self, qat: bool = False, method: str = DEFAULT_METHOD, int8_inputs: bool = False):
        super().__init__()
        self.qat = qat
        self.int8_inputs = int8_inputs  # --io int8: every float input is observed (_annotate_inputs)
        self.act = activation_spec(qat, method)
        self.conv_w = conv_weight_spec(qat)
        self.linear_w = linear_weight_spec(qat)
        self.conv_t_w = conv_weight_spec(qat, ch_axis=1)  # [Cin, Cout, kh, kw]: per output channel
        self.table = table_spec(qat)

    def _output(self, node, spec) -> None:
        """Annotate node's output (or that of a fused activation after it)."""
        act = _fused_activation(node)
        if act is not None:
            _annotate(act, {}, spec)

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or _annotated(node):
                continue
            if self._annotate_tuple_or_integer_results(node):
                continue
            if not _float_only(node):
                continue
            t = node.target
            if t in CONV_OPS or t in LINEAR_OPS:
                x, w = node.args[0], node.args[1]
                if not (isinstance(w, torch.fx.Node) and w.op == "get_attr"):
                    continue
                act = _fused_activation(node)
                _annotate(node, {x: self.act, w: self.conv_w if t in CONV_OPS else self.linear_w},
                          None if act is not None else self.act)
                if act is not None:
                    _annotate(act, {}, self.act)
            elif t in CONV_TRANSPOSE_OPS:
                x, w = node.args[0], node.args[1]
                groups = node.args[6] if len(node.args) > 6 else 1
                if not (isinstance(w, torch.fx.Node) and w.op == "get_attr") or groups != 1:
                    continue
                act = _fused_activation(node)
                _annotate(node, {x: self.act, w: self.conv_t_w}, None if act is not None else self.act)
                if act is not None:
                    _annotate(act, {}, self.act)
            elif t in MATMUL_OPS and all(isinstance(a, torch.fx.Node) and a.op != "get_attr" for a in node.args[:2]):
                _annotate(node, {node.args[0]: self.act, node.args[1]: self.act}, self.act)
            elif t in MUL_OPS and all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
                _annotate(node, {node.args[0]: self.act, node.args[1]: self.act}, self.act)
            elif is_lut_node(node):
                # an elementwise function of one activation: int8 as a lookup table
                _annotate(node, {node.args[0]: self.act}, self.act)
            elif t in ADD_OPS:
                a, b = node.args[0], node.args[1]
                if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)):
                    continue
                if len(node.args) > 2 or node.kwargs.get("alpha", 1) != 1:
                    continue
                act = _fused_activation(node)
                _annotate(node, {a: self.act, b: self.act}, None if act is not None else self.act)
                if act is not None:
                    _annotate(act, {}, self.act)
            elif t in SUM_OPS or t in PRELU_OPS:
                x = node.args[0]
                if isinstance(x, torch.fx.Node) and (t not in PRELU_OPS or _is_constant(node.args[1])):
                    _annotate(node, {x: self.act}, self.act)
            elif t in SHARED_OPS:
                x = node.args[0]
                if isinstance(x, torch.fx.Node) and (t not in PAD_OPS or _pad_keeps_range(node)):
                    _annotate(node, {x: self.act}, SharedQuantizationSpec((x, node)))
            elif t in CAT_OPS:
                inputs = [n for n in node.args[0] if isinstance(n, torch.fx.Node)]
                if not inputs:
                    continue
                first = (inputs[0], node)
                spec = {inputs[0]: self.act}
                # the same node twice (torch.cat([y, y])) is one input edge: sharing it with itself is a cycle
                spec.update({n: SharedQuantizationSpec(first) for n in inputs[1:] if n is not inputs[0]})
                _annotate(node, spec, SharedQuantizationSpec(first))
            elif t in SOFTMAX_OPS:
                x = node.args[0]
                if isinstance(x, torch.fx.Node):
                    _annotate(node, {x: self.act}, SOFTMAX_SPEC)
        if self.int8_inputs:
            self._annotate_inputs(model)
        return model

    def _annotate_inputs(self, model: torch.fx.GraphModule) -> None:
        """--io int8: a float graph input (not a state) that something reads unquantized (a GRU, a LayerNorm: an fp32
        island) gets an observer of its own, and the readers that quantize it share it: the input is quantized once
        (the int8 input's parameters), and the islands read it dequantized."""
        states = {st["input"] for st in model.meta.get("mcu_states", [])}
        for p in model.graph.nodes:
            if p.op != "placeholder" or p.name in states or not _float_activation(p) or not p.users:
                continue
            specs = [(u, _input_spec(u, p)) for u in p.users]
            if all(spec is not None for _, spec in specs):
                continue  # every reader quantizes it already (PT2E shares the one observer)
            _annotate(p, {}, self.act)
            for u, spec in specs:
                if spec is self.act:
                    u.meta["quantization_annotation"].input_qspec_map[p] = SharedQuantizationSpec(p)

    def _annotate_tuple_or_integer_results(self, node) -> bool:
        """Ops with integer or bool operands or results that run on int8 (int8_ops/indexing.py,
        compare.py): an embedding (int64 ids, a quantized table), argmax / argmin, max / min over a dim
        and topk (int64 indices beside values with the input's parameters), comparisons (bool results)
        and where (a bool condition); chunk / split / unbind (a tuple of parts, each read by a getitem, with the
        input's parameters). True when node was one of them."""
        t = node.target
        if t in EMBEDDING_OPS:
            w = node.args[0]
            val = w.meta.get("val") if isinstance(w, torch.fx.Node) else None
            if isinstance(w, torch.fx.Node) and w.op == "get_attr" and (val is None or val.dtype == torch.float32):
                _annotate(node, {w: self.table}, SharedQuantizationSpec((w, node)))
            return True
        if t in TENSOR_COMPARE_OPS or t in WHERE_OPS:
            a, b = node.args[:2] if t in TENSOR_COMPARE_OPS else node.args[1:3]
            if all(_float_activation(x) for x in (a, b)):
                if t in WHERE_OPS:
                    _annotate(node, {a: self.act, b: self.act}, self.act)
                else:
                    _annotate(node, {a: self.act} if b is a else {a: self.act, b: SharedQuantizationSpec((a, node))},
                              None)
            return True
        if t in SPLIT_OPS:
            x = node.args[0]
            if _float_activation(x):
                _annotate(node, {x: self.act}, None)
                for u in node.users:
                    if u.op == "call_function" and u.target is operator.getitem:
                        _annotate(u, {}, SharedQuantizationSpec((x, node)))
            return True
        if t in RANK_OPS or t in ARG_OPS or t in SCALAR_COMPARE_OPS:
            x = node.args[0]
            val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
            if isinstance(val, torch.Tensor) and val.dtype == torch.float32:
                _annotate(node, {x: self.act}, None)
                for u in node.users:
                    if u.op == "call_function" and u.target is operator.getitem and u.args[1] == 0:
                        _annotate(u, {}, SharedQuantizationSpec((x, node)))
            return True
        return False

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass


__all__ = ["McuQuantizer", "SOFTMAX_SCALE", "SOFTMAX_ZERO_POINT"]
