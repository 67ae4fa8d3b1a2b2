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

from mcu_gen.capture.export import UnsupportedOperatorError, _Lowering, op_name, source_line, torch_dtype_name
from mcu_gen.program.ir import DTYPE_CODES, Instruction, Program, TensorValue
from mcu_gen.quantize.islands import lower_island

aten = torch.ops.aten
qd = torch.ops.quantized_decomposed
Q_OPS = {qd.quantize_per_tensor.default}
DQ_OPS = {qd.dequantize_per_tensor.default}
DQ_CHANNEL_OPS = {qd.dequantize_per_channel.default}
NHWC = (0, 2, 3, 1)
INT8_MIN, INT8_MAX = -128, 127
SOFTMAX_INPUT_INTEGER_BITS = 5


class QuantLoweringError(UnsupportedOperatorError):
    pass


# -- fixed-point helpers ----------------------------------------------------------------------------
def quantize_multiplier(real: float) -> tuple[int, int]:
    """(Q31 multiplier, shift) with real = multiplier * 2**shift / 2**31, as TFLite's
    QuantizeMultiplier (shift > 0 is a left shift, CMSIS-NN's convention)."""
    if real <= 0.0 or not math.isfinite(real):
        return 0, 0
    frac, exp = math.frexp(real)
    q = int(math.floor(frac * (1 << 31) + 0.5))
    if q == 1 << 31:
        q //= 2
        exp += 1
    if exp < -31:
        return 0, 0
    if exp > 30:
        raise QuantLoweringError(f"requantization scale {real} is too large for a Q31 multiplier")
    return q, exp


def softmax_params(input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_shift, diff_min) of CMSIS-NN / TFLite int8 softmax (beta = 1)."""
    real = min(input_scale * (1 << (31 - SOFTMAX_INPUT_INTEGER_BITS)), (1 << 31) - 1.0)
    mult, shift = quantize_multiplier(real)
    max_input_rescaled = ((1 << SOFTMAX_INPUT_INTEGER_BITS) - 1) * (1 << (31 - SOFTMAX_INPUT_INTEGER_BITS)) \
        / (1 << shift)
    return mult, shift, -int(math.floor(max_input_rescaled))


def add_params(s1: float, s2: float, s_out: float):
    """Multipliers/shifts of an int8 add (TFLite: inputs shifted left by 20 bits)."""
    twice_max = 2.0 * max(s1, s2)
    m1 = quantize_multiplier(s1 / twice_max)
    m2 = quantize_multiplier(s2 / twice_max)
    mo = quantize_multiplier(twice_max / ((1 << 20) * s_out))
    return m1, m2, mo


def conv_scratch_bytes(in_shape, w_shape_oihw, stride, padding, dilation, depthwise: bool) -> int:
    """Scratch of CMSIS-NN's DSP (Cortex-M33/M4/M7) convolution wrappers, in bytes (what a
    CMSIS-NN backed kernel needs; the portable kernels read no scratch, see SCRATCH)."""
    _, cin, _, _ = in_shape
    cout, _, kh, kw = w_shape_oihw
    if depthwise:
        if cin == cout and kh == 3 and kw == 3 and list(padding) in ([1, 1], [0, 0]) and list(dilation) == [1, 1]:
            return 0  # arm_depthwise_conv_3x3_s8
        if cin == cout and list(dilation) == [1, 1]:
            return cin * kh * kw * 2  # arm_depthwise_conv_s8_opt: int16 im2col
        return 0
    if kh == 1 and kw == 1 and list(padding) == [0, 0] and list(stride) == [1, 1] and list(dilation) == [1, 1]:
        return 0  # arm_convolve_1x1_s8_fast
    return 2 * cin * kh * kw * 2  # arm_convolve_s8: two int16 im2col columns


def _attr(gm, node):
    obj = gm
    for part in node.target.split("."):
        obj = getattr(obj, part)
    return obj.detach() if isinstance(obj, torch.Tensor) else obj


def _pool_geometry(kernel, stride, padding) -> tuple:
    """ATen's pool kernel_size, stride (empty: the kernel size) and padding as [h, w] lists."""
    kernel = list(kernel)
    kernel = kernel * 2 if len(kernel) == 1 else kernel
    stride = list(stride) if stride else kernel
    stride = stride * 2 if len(stride) == 1 else stride
    padding = list(padding) if padding is not None else [0, 0]
    padding = padding * 2 if len(padding) == 1 else padding
    return kernel, stride, padding


def _shape(node) -> tuple:
    return tuple(int(s) for s in node.meta["val"].shape)


def _nontrivial_nhwc(shape) -> bool:
    """True when NCHW and NHWC memory orders of this shape differ."""
    return len(shape) == 4 and shape[1] > 1 and shape[2] * shape[3] > 1


def _activation_bounds(node) -> tuple[float, float]:
    t = node.target
    if t in (aten.relu.default, aten.relu_.default):
        return 0.0, math.inf
    if t is aten.relu6.default:
        return 0.0, 6.0
    if t in (aten.hardtanh.default, aten.hardtanh_.default):
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
        return float(lo), float(hi)
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


# Elementwise functions of one activation (other arguments numbers): int8 as a 256-entry
# lookup table computed here, cortex_m::quantized_activation (exact by construction).
LUT_OPS = {aten.sigmoid.default, aten.tanh.default, aten.hardswish.default, aten.hardsigmoid.default,
           aten.gelu.default, aten.silu.default, aten.leaky_relu.default, aten.elu.default, aten.relu.default,
           aten.relu6.default, aten.hardtanh.default, aten.clamp.default, aten.neg.default, aten.abs.default,
           aten.exp.default, aten.log.default, aten.sqrt.default, aten.rsqrt.default, aten.square.default,
           aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor, aten.div.Tensor, aten.rsub.Scalar,
           aten.mul.Scalar, aten.add.Scalar, aten.sub.Scalar, aten.div.Scalar, aten.pow.Tensor_Scalar,
           aten.softplus.default, aten.mish.default, aten.selu.default, aten.celu.default,
           aten.hardshrink.default, aten.softshrink.default, aten.log_sigmoid.default, aten.sin.default,
           aten.cos.default, aten.erf.default, aten.reciprocal.default, aten.relu_.default,
           aten.hardtanh_.default, aten.hardswish_.default, aten.sigmoid_.default, aten.silu_.default,
           aten.leaky_relu_.default, aten.elu_.default, aten.tanh_.default}


def is_lut_node(node) -> bool:
    """An elementwise op of exactly one tensor (an activation), all other arguments numbers."""
    if node.op != "call_function" or node.target not in LUT_OPS:
        return False
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return False
    rest = list(node.args[1:]) + list(node.kwargs.values())
    return all(isinstance(a, (int, float, bool, str)) or a is None for a in rest)


def activation_lut(fn, args, kwargs, in_scale, in_zp, out_scale, out_zp, lo=INT8_MIN, hi=INT8_MAX) -> np.ndarray:
    """lut[q + 128] = quantize(fn(dequantize(q))) in float32, as quantized_decomposed does it."""
    from mcu_gen.quantize.arith import dequantize_f32, quantize_f32

    x = torch.from_numpy(dequantize_f32(np.arange(INT8_MIN, INT8_MAX + 1), in_scale, in_zp))
    with torch.no_grad():
        y = fn(x, *args, **kwargs).to(torch.float32).numpy()
    y = np.nan_to_num(y, nan=0.0, posinf=np.finfo(np.float32).max, neginf=-np.finfo(np.float32).max)
    return np.clip(quantize_f32(y, out_scale, out_zp), lo, hi).astype(np.int8)


ACTIVATIONS = {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default,
               aten.hardtanh_.default, aten.clamp.default}
VIEW_OPS = {aten.flatten.using_ints, aten.view.default, aten.reshape.default, aten.squeeze.dim, aten.squeeze.dims,
            aten.unsqueeze.default, aten._unsafe_view.default}
NOOP_OPS = {aten.dropout.default, aten.clone.default, aten.alias.default, aten.detach.default}


class _ConstAdapter:
    """What export._Lowering needs of a ConstGraph: constants by get_attr node."""

    def __init__(self, gm):
        self.gm = gm

    def const(self, node):
        if isinstance(node, torch.fx.Node) and node.op == "get_attr":
            return _attr(self.gm, node)
        return None

    def is_const(self, node) -> bool:
        return self.const(node) is not None


class QuantLowering:
    def __init__(self, gm: torch.fx.GraphModule, io: str = "float32", user_file=None,
                 has_kernel: Optional[Callable[[str], bool]] = None):
        if io not in ("float32", "int8"):
            raise ValueError(f"io must be 'float32' or 'int8', not {io!r}")
        self.gm = gm
        self.io = io
        self.user_file = user_file
        self.has_kernel = has_kernel
        self.fp = _Lowering(_ConstAdapter(gm), user_file, has_kernel)  # fp32 fallback ops
        self.program: Program = self.fp.program
        self.aliases = self.fp.aliases
        self.q = {}  # fx node (quantize or activation dequantize) -> int8 value
        self.f = {}  # (fx node, contiguous) -> fp32 value
        self.done = set()  # nodes lowered as part of a pattern
        self.nhwc_flat = {}  # value -> (C, H, W): a flatten that kept NHWC byte order
        self.fallback = []
        self.cmsis_scratch = False  # the portable cortex_m kernels take no scratch
        self.results = {}  # fx node name -> (int8 value, op, source): for the per-operator error

    # -- values ----------------------------------------------------------------------------------
    def _int8(self, shape, scale, zp, dim_order=None, name="") -> int:
        if dim_order is None and _nontrivial_nhwc(shape):
            dim_order = NHWC
        elif dim_order is None and len(shape) == 4:
            dim_order = NHWC
        return self.program.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, name=name,
                                            scale=float(scale), zero_point=int(zp)))

    def _const(self, array: np.ndarray, dtype: str, name: str) -> int:
        array = np.asarray(array.astype(dtype), order="C")
        return self.program.add(TensorValue(array.shape, dtype, data=array, name=name))

    def _scalar(self, kind, value=None) -> int:
        return self.program.add_scalar(kind, value)

    def _alias(self, src: int, shape, dim_order=None, name="") -> int:
        t = self.program.tensor(src)
        v = self.program.add(TensorValue(tuple(shape), t.dtype, dim_order=dim_order, name=name,
                                         scale=t.scale, zero_point=t.zero_point))
        self.aliases[v] = src
        return v

    def _emit(self, op: str, args: list, out: int, node=None) -> None:
        src = source_line(node, self.user_file) if node is not None else ""
        self.program.instructions.append(Instruction(op, list(args) + [out, out], src))

    def _scratch(self, nbytes: int, name: str) -> int:
        """The schema's scratch tensor: empty unless the kernels read one (CMSIS-NN backed kernels)."""
        return self.program.add(TensorValue((nbytes if self.cmsis_scratch else 0,), "uint8", name=name))

    # layout changes of int8 activations
    def _to_nhwc(self, v: int, node=None) -> int:
        t = self.program.tensor(v)
        if len(t.shape) != 4 or t.dim_order == NHWC:
            return v
        if not _nontrivial_nhwc(t.shape):
            return self._alias(v, t.shape, NHWC, t.name + "_nhwc")
        n, c, h, w = t.shape
        out = self.program.add(TensorValue((n, h, w, c), t.dtype, name=t.name + "_nhwc", scale=t.scale,
                                           zero_point=t.zero_point))
        self._emit("cortex_m::transpose.out", [v, self._scalar("int_list", [0, 2, 3, 1])], out, node)
        return self._alias(out, t.shape, NHWC, t.name + "_nhwc_view")

    def _to_nchw(self, v: int, node=None) -> int:
        t = self.program.tensor(v)
        if len(t.shape) != 4 or t.dim_order != NHWC:
            return self._contig(v, node)
        if not _nontrivial_nhwc(t.shape):
            return self._alias(v, t.shape, None, t.name + "_nchw")
        n, c, h, w = t.shape
        flat = self._alias(v, (n, h, w, c), None, t.name + "_as_nhwc")
        out = self.program.add(TensorValue(t.shape, t.dtype, name=t.name + "_nchw", scale=t.scale,
                                           zero_point=t.zero_point))
        self._emit("cortex_m::transpose.out", [flat, self._scalar("int_list", [0, 3, 1, 2])], out, node)
        return out

    @staticmethod
    def _is_contiguous(t) -> bool:
        """True when t's bytes are in logical (row-major) order: its non-unit dims are in order."""
        if t.dim_order is None:
            return True
        big = [d for d in t.dim_order if t.shape[d] != 1]
        return big == sorted(big)

    def _contig(self, v: int, node=None) -> int:
        """v in logical (row-major) memory order: an alias when it is already, else a transpose."""
        t = self.program.tensor(v)
        if t.dim_order is None:
            return v
        if self._is_contiguous(t):
            return self._alias(v, t.shape, None, t.name + "_c")
        out = self.program.add(TensorValue(t.shape, t.dtype, name=t.name + "_c", scale=t.scale,
                                           zero_point=t.zero_point))
        self._emit("cortex_m::transpose.out", [v, self._scalar("int_list", list(range(len(t.shape))))], out, node)
        return out

    def _quant_args(self, scale, zp) -> list:
        return [self._scalar("float", float(scale)), self._scalar("int", int(zp)), self._scalar("int", INT8_MIN),
                self._scalar("int", INT8_MAX), self._scalar("int", DTYPE_CODES["int8"])]

    def fp32_of(self, node, contiguous: bool) -> int:
        """The fp32 value of an fx node (dequantizing an int8 activation if needed)."""
        key = (node, contiguous)
        if key in self.f:
            return self.f[key]
        if node in self.q:  # an activation dequantize node
            v = self.q[node]
            if contiguous:
                v = self._to_nchw(v, node)
            t = self.program.tensor(v)
            out = self.program.add(TensorValue(t.shape, "float32", dim_order=t.dim_order, name=node.name))
            self._emit("cortex_m::dequantize_per_tensor.out", [v] + self._quant_args(t.scale, t.zero_point), out,
                       node)
            self.f[key] = out
            return out
        if (node, not contiguous) in self.f:
            v = self.f[(node, not contiguous)]
            t = self.program.tensor(v)
            if not _nontrivial_nhwc(t.shape):
                return v
            raise QuantLoweringError(f"{node.name}: an fp32 channels-last tensor feeds an fp32 operator")
        raise QuantLoweringError(f"{node.name}: no fp32 value")

    def quant_of(self, node) -> Optional[int]:
        """The int8 value behind an activation dequantize node, else None."""
        return self.q.get(node)

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
            scales = _attr(self.gm, s).double().numpy() if isinstance(s, torch.fx.Node) else np.asarray(s)
            zps = _attr(self.gm, z).numpy() if isinstance(z, torch.fx.Node) else np.asarray(z)
            return _attr(self.gm, w).numpy().astype(np.int8), np.asarray(scales, np.float64), np.asarray(zps)
        if node.target in DQ_OPS and node.args[0].op == "get_attr":
            w = _attr(self.gm, node.args[0]).numpy().astype(np.int8)
            return w, np.full(w.shape[axis], float(node.args[1])), np.full(w.shape[axis], int(node.args[2]))
        return None

    def bias(self, node, in_scale, w_scales, name) -> Optional[int]:
        if node is None:
            return None
        if not (isinstance(node, torch.fx.Node) and node.op == "get_attr"):
            raise QuantLoweringError("bias is not a constant")
        b = _attr(self.gm, node).double().numpy()
        q = np.round(b / (in_scale * w_scales))
        q = np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)
        return self._const(q, "int32", name)

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

    def _act_range(self, act, scale, zp) -> tuple[int, int]:
        lo, hi = INT8_MIN, INT8_MAX
        if act is not None:
            a, b = _activation_bounds(act)
            if math.isfinite(a):
                lo = max(lo, min(hi, int(zp + np.round(a / scale))))
            if math.isfinite(b):
                hi = min(hi, max(INT8_MIN, int(zp + np.round(b / scale))))
        return lo, hi

    def _finish(self, node, qnode, act, out) -> None:
        self.q[qnode] = out
        last = act if act is not None else node
        self.results[last.name] = (out, op_name(node.target) if isinstance(node.target, torch._ops.OpOverload)
                                   else str(node.target), source_line(node, self.user_file))
        self.done.update({node, qnode} | ({act} if act is not None else set()))

    @staticmethod
    def _qparams(qnode):
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
        if oq is None:
            return "its result is not quantized (the quantizer left it in fp32)"
        qnode, act = oq
        if t in (aten.conv2d.default, aten.conv1d.default, aten.conv2d.padding, aten.conv1d.padding):
            return self._conv(node, qnode, act)
        if t is aten.conv_transpose2d.input:
            return self._conv_transpose(node, qnode, act)
        if t in (aten.transpose.int, aten.permute.default, aten.t.default):
            return self._permute(node, qnode, act)
        if t in (aten.matmul.default, aten.bmm.default, aten.mm.default):
            return self._matmul(node, qnode, act)
        if t is aten.cat.default:
            return self._cat(node, qnode, act)
        if t in (aten.upsample_nearest2d.vec, aten.upsample_nearest2d.default):
            return self._upsample_nearest(node, qnode, act)
        if t is aten.linear.default:
            return self._linear(node, qnode, act)
        if t is aten.slice.Tensor:
            return self._slice(node, qnode, act)
        if t in (aten.add.Tensor, aten.sub.Tensor) and all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
            return self._add(node, qnode, act)
        if t is aten.mul.Tensor and all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
            return self._mul(node, qnode, act)
        if is_lut_node(node):
            return self._lut(node, qnode, act)
        if t is aten.max_pool2d.default:
            return self._max_pool(node, qnode, act)
        if t is aten.avg_pool2d.default:
            return self._avg_pool(node, qnode, act)
        if t in (aten.softmax.int, aten._softmax.default):
            return self._softmax(node, qnode, act)
        if t in (aten.adaptive_avg_pool2d.default, aten._adaptive_avg_pool2d.default):
            return self._adaptive_avg_pool(node, qnode, act)
        if t is aten.mean.dim:
            return self._mean(node, qnode, act)
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
        shape = _shape(node)
        if self._qparams(qnode) != (t.scale, t.zero_point):
            return "a view that changes quantization parameters"
        if len(t.shape) == 4 and t.dim_order == NHWC and _nontrivial_nhwc(t.shape):
            if node.target is aten.flatten.using_ints and len(shape) == 2 and self._only_int8_linears(qnode):
                out = self._alias(v, shape, None, node.name)
                self.nhwc_flat[out] = t.shape[1:]
                self._finish(node, qnode, None, out)
                return None
            v = self._to_nchw(v, node)
        v = self._contig(v, node)
        dim_order = NHWC if len(shape) == 4 else None
        out = self._alias(v, shape, dim_order, node.name)
        if len(shape) == 4 and _nontrivial_nhwc(shape):
            # a view producing a 4-D tensor from NCHW-ordered bytes: make it channels-last
            out = self._alias(v, shape, None, node.name + "_nchw")
            out = self._to_nhwc(out, node)
        self._finish(node, qnode, None, out)
        return None

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

    def _conv(self, node, qnode, act):
        args = list(node.args) + [None] * (7 - len(node.args))
        x, wn, bn, stride, padding, dilation, groups = args
        one_d = node.target in (aten.conv1d.default, aten.conv1d.padding)
        stride = list(stride or [1, 1])
        padding = padding if padding is not None else [0, 0]
        dilation = list(dilation or [1, 1])
        groups = groups or 1
        if isinstance(padding, str):  # conv2d.padding / conv1d.padding: 'valid' or 'same' (stride 1)
            wq = self.weight(wn)
            kernel = list(wq[0].shape[2:]) if wq is not None else None
            dil = dilation * len(kernel) if kernel is not None and len(dilation) == 1 else dilation
            if padding == "valid":
                padding = [0] * (1 if one_d else 2)
            elif padding == "same" and kernel is not None and all((d * (k - 1)) % 2 == 0 for d, k in zip(dil, kernel)):
                padding = [d * (k - 1) // 2 for d, k in zip(dil, kernel)]
            else:
                return f"padding='{padding}' with an even kernel extent (asymmetric padding)"
        padding = list(padding)
        if one_d:  # conv1d as a 1xN conv2d: [N, C, L] is [N, C, 1, L]
            stride, padding, dilation = [1, stride[0]], [0, padding[0]], [1, dilation[0]]
        stride, padding, dilation = [s * 2 if len(s) == 1 else s for s in (stride, padding, dilation)]
        v = self.quant_of(x)
        wq = self.weight(wn)
        if v is None or wq is None:
            return "input or weight is not int8"
        w, w_scales, w_zps = wq
        if np.any(w_zps != 0):
            return "weights are not symmetric"
        if one_d:
            v = self._as_4d(v)
            w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
        v = self._to_nhwc(v, node)
        xt = self.program.tensor(v)
        s_out, zp_out = self._qparams(qnode)
        cin, cout = xt.shape[1], w.shape[0]
        depthwise = groups > 1 and groups == cin and cout % cin == 0
        mults, shifts = zip(*[quantize_multiplier(xt.scale * float(s) / s_out) for s in w_scales])
        oshape = _shape(node)
        out = self._int8(oshape if not one_d else (oshape[0], oshape[1], 1, oshape[2]), s_out, zp_out, NHWC,
                         qnode.name)
        bias = self.bias(bn, xt.scale, w_scales, f"{node.name}_bias")
        lo, hi = self._act_range(act, s_out, zp_out)
        if depthwise:
            wt = w.transpose(1, 2, 3, 0)  # [O,1,kh,kw] -> IHWO [1,kh,kw,O]
            name = "cortex_m::quantized_depthwise_conv2d.out"
        else:
            wt = w.transpose(0, 2, 3, 1)  # OIHW -> OHWI
            name = "cortex_m::quantized_conv2d.out"
        scratch = self._scratch(conv_scratch_bytes(xt.shape, w.shape, stride, padding, dilation, depthwise),
                                f"{node.name}_scratch")
        a = [v, self._const(wt, "int8", f"{node.name}_weight"),
             bias if bias is not None else self._scalar("none"),
             self._scalar("int_list", stride), self._scalar("int_list", padding), self._scalar("int_list", dilation)]
        if depthwise:
            a.append(self._scalar("int", cout // cin))
        a += [self._scalar("int", -xt.zero_point), self._scalar("int", zp_out),
              self._const(np.array(mults), "int32", f"{node.name}_multipliers"),
              self._const(np.array(shifts), "int32", f"{node.name}_shifts"),
              self._scalar("int", lo), self._scalar("int", hi), scratch]
        self._emit(name, a, out, node)
        if one_d:  # [N, O, 1, L] channels-last is [N, O, L] with dim_order (0, 2, 1)
            out = self._alias(out, oshape, (0, 2, 1), qnode.name + "_1d")
        self._finish(node, qnode, act, out)
        return None

    def _as_4d(self, v: int) -> int:
        """A 3-D [N, C, L] int8 value as the 4-D [N, C, 1, L] (free: same bytes)."""
        t = self.program.tensor(v)
        n, c, length = t.shape
        if t.dim_order == (0, 2, 1):
            return self._alias(v, (n, c, 1, length), NHWC, t.name + "_4d")
        v = self._contig(v)
        return self._alias(v, (n, c, 1, length), (0, 1, 2, 3), t.name + "_4d")

    def _conv_transpose(self, node, qnode, act):
        args = list(node.args) + [None] * (8 - len(node.args))
        x, wn, bn, stride, padding, output_padding, groups, dilation = args
        stride, padding = list(stride or [1, 1]), list(padding or [0, 0])
        output_padding, dilation = list(output_padding or [0, 0]), list(dilation or [1, 1])
        stride, padding, output_padding, dilation = [s * 2 if len(s) == 1 else s for s in
                                                     (stride, padding, output_padding, dilation)]
        if (groups or 1) != 1:
            return "grouped transposed convolution"
        v = self.quant_of(x)
        wq = self.weight(wn, axis=1)
        if v is None or wq is None:
            return "input or weight is not int8 (per output channel)"
        w, w_scales, w_zps = wq
        if np.any(w_zps != 0):
            return "weights are not symmetric"
        v = self._to_nhwc(v, node)
        xt = self.program.tensor(v)
        s_out, zp_out = self._qparams(qnode)
        mults, shifts = zip(*[quantize_multiplier(xt.scale * float(s) / s_out) for s in w_scales])
        out = self._int8(_shape(node), s_out, zp_out, NHWC, qnode.name)
        bias = self.bias(bn, xt.scale, w_scales, f"{node.name}_bias")
        lo, hi = self._act_range(act, s_out, zp_out)
        wt = w.transpose(1, 2, 3, 0)  # [Cin, Cout, kh, kw] -> OHWI [Cout, kh, kw, Cin]
        il = lambda x: self._scalar("int_list", [int(a) for a in x])  # noqa: E731
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        a = [v, self._const(wt, "int8", f"{node.name}_weight"), bias if bias is not None else self._scalar("none"),
             il(stride), il(padding), il(output_padding), il(dilation), i(-xt.zero_point), i(zp_out),
             self._const(np.array(mults), "int32", f"{node.name}_multipliers"),
             self._const(np.array(shifts), "int32", f"{node.name}_shifts"), i(lo), i(hi),
             self._scratch(0, f"{node.name}_scratch"), self._scratch(0, f"{node.name}_output_scratch")]
        self._emit("cortex_m::quantized_transpose_conv2d.out", a, out, node)
        self._finish(node, qnode, act, out)
        return None

    def _same_qparams_input(self, node, qnode, act, what: str):
        """(value, tensor) of the int8 input of an operator that keeps its input's quantization
        parameters (a data movement), or why it cannot run in int8."""
        v = self.quant_of(node.args[0])
        if v is None:
            return "input is not int8"
        t = self.program.tensor(v)
        if self._qparams(qnode) != (t.scale, t.zero_point) or act is not None:
            return f"{what} that changes quantization parameters"
        return v, t

    def _permute(self, node, qnode, act):
        """transpose / permute of an int8 activation: free, a view with another dim_order."""
        r = self._same_qparams_input(node, qnode, act, "a permute")
        if isinstance(r, str):
            return r
        v, t = r
        nd = len(t.shape)
        if node.target is aten.transpose.int:
            d0, d1 = node.args[1] % nd, node.args[2] % nd
            perm = list(range(nd))
            perm[d0], perm[d1] = perm[d1], perm[d0]
        elif node.target is aten.t.default:
            perm = list(range(nd))[::-1]
        else:
            perm = [d % nd for d in node.args[1]]
        inv = [perm.index(i) for i in range(nd)]
        order = t.dim_order or tuple(range(nd))
        new_order = tuple(inv[d] for d in order)
        shape = tuple(t.shape[p] for p in perm)
        out = self._alias(v, shape, None if new_order == tuple(range(nd)) else new_order, qnode.name)
        self._finish(node, qnode, act, out)
        return None

    def _matmul(self, node, qnode, act):
        """Two int8 activations: cortex_m::quantized_batch_matmul (rhs read transposed)."""
        a_node, b_node = node.args[0], node.args[1]
        va, vb = self.quant_of(a_node), self.quant_of(b_node)
        if va is None or vb is None:
            return "an input is not int8 (a constant operand is a linear layer)"
        if act is not None:
            return "matmul with a fused activation"
        ta, tb = self.program.tensor(va), self.program.tensor(vb)
        if len(ta.shape) < 2 or len(tb.shape) < 2 or ta.shape[:-2] != tb.shape[:-2]:
            return "matmul with broadcasting batch dimensions"
        batch = int(np.prod(ta.shape[:-2])) if len(ta.shape) > 2 else 1
        m, k = ta.shape[-2:]
        n = tb.shape[-1]
        # rhs^T [.., N, K]: a free view of b when b's bytes are b^T's row-major order
        nd = len(tb.shape)
        perm = list(range(nd - 2)) + [nd - 1, nd - 2]
        inv = [perm.index(i) for i in range(nd)]
        order = tb.dim_order or tuple(range(nd))
        rt_order = tuple(inv[d] for d in order)
        rt_shape = tuple(tb.shape[p] for p in perm)
        rt = self._alias(vb, rt_shape, None if rt_order == tuple(range(nd)) else rt_order, tb.name + "_t")
        rt = self._contig(rt, node)
        lhs = self._contig(va, node)
        lhs = self._alias(lhs, (batch, m, k), None, ta.name + "_3d")
        rt = self._alias(rt, (batch, n, k), None, tb.name + "_t3d")
        s_out, zp_out = self._qparams(qnode)
        mult, shift = quantize_multiplier(ta.scale * tb.scale / s_out)
        out = self._int8((batch, m, n), s_out, zp_out, None, qnode.name)
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        self._emit("cortex_m::quantized_batch_matmul.out",
                   [lhs, i(-ta.zero_point), rt, i(-tb.zero_point), i(zp_out), i(mult), i(shift),
                    self._scratch(0, f"{node.name}_scratch")], out, node)
        out = self._alias(out, _shape(node), None, qnode.name + "_view")
        self._finish(node, qnode, act, out)
        return None

    def _cat(self, node, qnode, act):
        """int8 cat: inputs with the output's quantization (others requantized by a table), in
        one memory order; aten::cat.out on the memory-order views."""
        tensors = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        vs = [self.quant_of(x) for x in tensors]
        if any(v is None for v in vs):
            return "an input is not int8"
        if act is not None:
            return "cat with a fused activation"
        s_out, zp_out = self._qparams(qnode)
        vs = [self._requantize(v, s_out, zp_out, node) for v in vs]
        ts = [self.program.tensor(v) for v in vs]
        nd = len(ts[0].shape)
        dim = dim % nd
        if nd == 4:
            vs = [self._to_nhwc(v, node) for v in vs]
            order = NHWC
        else:
            vs = [self._contig(v, node) for v in vs]
            order = tuple(range(nd))
        mem = []
        for v in vs:
            t = self.program.tensor(v)
            mem.append(self._alias(v, tuple(t.shape[d] for d in order), None, t.name + "_mem"))
        mdim = order.index(dim)
        shape = _shape(node)
        mem_shape = tuple(shape[d] for d in order)
        out_mem = self._int8(mem_shape, s_out, zp_out, tuple(range(nd)), qnode.name + "_mem")
        self._emit("aten::cat.out", [self._scalar("tensor_list", mem), self._scalar("int", mdim)], out_mem, node)
        out = self._alias(out_mem, shape, NHWC if nd == 4 else None, qnode.name)
        self._finish(node, qnode, act, out)
        return None

    def _slice(self, node, qnode, act):
        """A slice (e.g. the older frames of a ring buffer): a byte copy, aten::slice_copy on int8."""
        r = self._same_qparams_input(node, qnode, act, "slice")
        if isinstance(r, str):
            return r
        v, t = r
        if len(t.shape) == 4:
            return "slice of a 4-D (channels-last) int8 tensor"
        args = list(node.args) + [0, None, None, 1][len(node.args) - 1:]
        dim, start, end, step = args[1:5]
        v = self._contig(v, node)
        out = self._int8(_shape(node), t.scale, t.zero_point, None, qnode.name)
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        self._emit("aten::slice_copy.Tensor_out",
                   [v, i(dim), i(0 if start is None else start), i(2**63 - 1 if end is None else end), i(step)], out,
                   node)
        self._finish(node, qnode, act, out)
        return None

    def _requantize(self, v: int, scale: float, zp: int, node=None) -> int:
        """v with quantization (scale, zp): itself, or a 256-entry table of dequantize -> quantize."""
        t = self.program.tensor(v)
        if (t.scale, t.zero_point) == (float(scale), int(zp)):
            return v
        lut = activation_lut(lambda x: x, (), {}, t.scale, t.zero_point, scale, zp)
        out = self._int8(t.shape, scale, zp, t.dim_order, t.name + "_rq")
        self._emit("cortex_m::quantized_activation.out", [v, self._const(lut, "int8", t.name + "_rq_lut")], out,
                   node)
        return out

    def _upsample_nearest(self, node, qnode, act):
        """Nearest upsampling: a byte copy (aten::upsample_nearest2d.vec_out on int8, NCHW order)."""
        r = self._same_qparams_input(node, qnode, act, "upsampling")
        if isinstance(r, str):
            return r
        v, t = r
        s_out, zp_out = t.scale, t.zero_point
        v = self._to_nchw(v, node)
        shape = _shape(node)
        out = self._int8(shape, s_out, zp_out, (0, 1, 2, 3), qnode.name)
        self._emit("aten::upsample_nearest2d.vec_out",
                   [v, self._scalar("int_list", list(shape[2:])), self._scalar("none")], out, node)
        self._finish(node, qnode, act, out)
        return None

    def _linear(self, node, qnode, act):
        x, wn = node.args[0], node.args[1]
        bn = node.args[2] if len(node.args) > 2 else None
        v = self.quant_of(x)
        wq = self.weight(wn)
        if v is None or wq is None:
            return "input or weight is not int8"
        w, w_scales, w_zps = wq
        if np.any(w_zps != 0):
            return "weights are not symmetric"
        if not np.all(w_scales == w_scales[0]):
            return "per-channel linear weights (cortex_m::quantized_linear takes one multiplier)"
        if v not in self.nhwc_flat:
            v = self._contig(v, node)
        xt = self.program.tensor(v)
        if v in self.nhwc_flat:
            c, h, wd = self.nhwc_flat[v]
            w = w.reshape(w.shape[0], c, h, wd).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
        s_out, zp_out = self._qparams(qnode)
        mult, shift = quantize_multiplier(xt.scale * float(w_scales[0]) / s_out)
        out = self._int8(_shape(node), s_out, zp_out, None, qnode.name)
        bias = self.bias(bn, xt.scale, w_scales, f"{node.name}_bias")
        lo, hi = self._act_range(act, s_out, zp_out)
        # The kernel sum bias + input_offset * sum(w) (ExecuTorch's form; the weights are symmetric)
        # replaces the bias: CMSIS-NN's MVE fully-connected reads it instead of summing the
        # weights on every call, and the DSP one skips the input offset (docs/cmsis_nn.md).
        ksum = w.astype(np.int64).sum(axis=1) * -xt.zero_point
        if bias is not None:
            ksum = ksum + self.program.tensor(bias).data.astype(np.int64)
        if np.all(np.abs(ksum) < 2**31):
            bias, kernel_sum = None, self._const(ksum, "int32", f"{node.name}_kernel_sum")
        else:
            kernel_sum = self._scalar("none")
        a = [v, self._const(w, "int8", f"{node.name}_weight"), bias if bias is not None else self._scalar("none"),
             kernel_sum, self._scalar("int", -xt.zero_point), self._scalar("int", 0),
             self._scalar("int", zp_out), self._scalar("int_list", [mult]), self._scalar("int_list", [shift]),
             self._scalar("int", hi), self._scalar("int", lo)]
        self._emit("cortex_m::quantized_linear.out", a, out, node)
        self._finish(node, qnode, act, out)
        return None

    def _add(self, node, qnode, act):
        a_node, b_node = node.args[0], node.args[1]
        if node.kwargs.get("alpha", 1) != 1 or len(node.args) > 2:
            return "add with alpha != 1"
        va, vb = self.quant_of(a_node), self.quant_of(b_node)
        if va is None or vb is None:
            return "an input is not int8"
        va, vb = self._to_nhwc(va, node), self._to_nhwc(vb, node)
        ta, tb = self.program.tensor(va), self.program.tensor(vb)
        s_out, zp_out = self._qparams(qnode)
        (m1, s1), (m2, s2), (mo, so) = add_params(ta.scale, tb.scale, s_out)
        if node.target is aten.sub.Tensor:
            m2 = -m2  # x - y: y's rescaling negated (same arithmetic on both kernels and the reference)
        shape = _shape(node)
        out = self._int8(shape, s_out, zp_out, NHWC if len(shape) == 4 else None, qnode.name)
        lo, hi = self._act_range(act, s_out, zp_out)
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        self._emit("cortex_m::quantized_add.out",
                   [va, i(ta.zero_point), i(m1), i(s1), vb, i(tb.zero_point), i(m2), i(s2), i(zp_out), i(mo), i(so),
                    i(lo), i(hi)], out, node)
        self._finish(node, qnode, act, out)
        return None

    def _mul(self, node, qnode, act):
        """Two int8 activations (broadcasting): cortex_m::quantized_mul."""
        va, vb = self.quant_of(node.args[0]), self.quant_of(node.args[1])
        if va is None or vb is None:
            return "an input is not int8"
        if act is not None:
            return "mul with a fused activation"
        va, vb = self._to_nhwc(va, node), self._to_nhwc(vb, node)
        ta, tb = self.program.tensor(va), self.program.tensor(vb)
        s_out, zp_out = self._qparams(qnode)
        m, sh = quantize_multiplier(ta.scale * tb.scale / s_out)
        shape = _shape(node)
        out = self._int8(shape, s_out, zp_out, NHWC if len(shape) == 4 else None, qnode.name)
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        self._emit("cortex_m::quantized_mul.out", [va, i(ta.zero_point), vb, i(tb.zero_point), i(zp_out), i(m), i(sh)],
                   out, node)
        self._finish(node, qnode, act, out)
        return None

    def _lut(self, node, qnode, act):
        """An elementwise function of one int8 activation: a 256-entry table, cortex_m::quantized_activation."""
        v = self.quant_of(node.args[0])
        if v is None:
            return "input is not int8"
        xt = self.program.tensor(v)
        s_out, zp_out = self._qparams(qnode)
        lo, hi = self._act_range(act, s_out, zp_out)
        lut = activation_lut(node.target, node.args[1:], dict(node.kwargs), xt.scale, xt.zero_point, s_out, zp_out,
                             lo, hi)
        out = self._int8(xt.shape, s_out, zp_out, xt.dim_order, qnode.name)
        self._emit("cortex_m::quantized_activation.out", [v, self._const(lut, "int8", f"{node.name}_lut")], out, node)
        self._finish(node, qnode, act, out)
        return None

    def _pool_args(self, node, n_defaults):
        return list(node.args) + [None] * (n_defaults - len(node.args))

    def _max_pool(self, node, qnode, act):
        x, kernel, stride, padding, dilation, ceil_mode = self._pool_args(node, 6)
        kernel, stride, padding = _pool_geometry(kernel, stride, padding)
        dilation = list(dilation) if dilation else [1, 1]
        dilation = dilation * 2 if len(dilation) == 1 else dilation
        if dilation != [1, 1]:
            return "max pool with dilation"
        v = self.quant_of(x)
        if v is None:
            return "input is not int8"
        v = self._to_nhwc(v, node)
        xt = self.program.tensor(v)
        if ceil_mode:  # the windows past the end: pad bottom/right with -128 (never the max)
            n, c, h, w = xt.shape
            oh, ow = _shape(node)[2:]
            eh = max(0, (oh - 1) * stride[0] + kernel[0] - h - 2 * padding[0])
            ew = max(0, (ow - 1) * stride[1] + kernel[1] - w - 2 * padding[1])
            if eh or ew:
                padded = self._int8((n, c, h + eh, w + ew), xt.scale, xt.zero_point, NHWC, xt.name + "_ceil")
                il = lambda x: self._scalar("int_list", [int(a) for a in x])  # noqa: E731
                self._emit("cortex_m::pad.out", [v, il([0, 0, 0, 0]), il([0, eh, ew, 0]),
                                                 self._scalar("int", INT8_MIN)], padded, node)
                v, xt = padded, self.program.tensor(padded)
        s_out, zp_out = self._qparams(qnode)
        if zp_out != xt.zero_point or s_out != xt.scale:
            return "output quantization differs from the input's"
        lo, hi = self._act_range(act, s_out, zp_out)
        out = self._int8(_shape(node), s_out, zp_out, NHWC, qnode.name)
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        il = lambda x: self._scalar("int_list", [int(a) for a in x])  # noqa: E731
        self._emit("cortex_m::quantized_max_pool2d.out",
                   [v, il(kernel), il(stride), il(padding), il(dilation), self._scalar("bool", False),
                    i(xt.zero_point), i(zp_out), i(lo), i(hi)], out, node)
        self._finish(node, qnode, act, out)
        return None

    def _avg_pool(self, node, qnode, act):
        x, kernel, stride, padding, ceil_mode, count_include_pad, divisor = self._pool_args(node, 7)
        kernel, stride, padding = _pool_geometry(kernel, stride, padding)
        if divisor is not None or act is not None:
            return "avg pool with divisor_override or a fused activation"
        if any(padding) and count_include_pad is not False:
            return "padded avg pool that counts the padding"
        v = self.quant_of(x)
        if v is None:
            return "input is not int8"
        v = self._to_nhwc(v, node)
        xt = self.program.tensor(v)
        s_out, zp_out = self._qparams(qnode)
        if zp_out != xt.zero_point or s_out != xt.scale:
            return "output quantization differs from the input's"
        mult, shift = quantize_multiplier(xt.scale)
        out = self._int8(_shape(node), s_out, zp_out, NHWC, qnode.name)
        scratch = self._scratch(xt.shape[1] * 4, f"{node.name}_scratch")  # arm_avgpool_s8 (DSP): int32 per channel
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        il = lambda x: self._scalar("int_list", [int(a) for a in x])  # noqa: E731
        self._emit("cortex_m::quantized_avg_pool2d.out",
                   [v, il(kernel), il(stride), il(padding), self._scalar("bool", bool(ceil_mode)), i(zp_out), i(mult), i(shift),
                    scratch], out, node)
        self._finish(node, qnode, act, out)
        return None

    def _avg_pool_int8(self, node, qnode, v, kernel, stride, padding):
        """cortex_m::quantized_avg_pool2d of int8 value v (same quantization in and out)."""
        v = self._to_nhwc(v, node)
        xt = self.program.tensor(v)
        s_out, zp_out = self._qparams(qnode)
        if zp_out != xt.zero_point or s_out != xt.scale:
            return None, "output quantization differs from the input's"
        n, c, h, w = xt.shape
        oh = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
        ow = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
        mult, shift = quantize_multiplier(xt.scale)
        out = self._int8((n, c, oh, ow), s_out, zp_out, NHWC, qnode.name)
        scratch = self._scratch(c * 4, f"{node.name}_scratch")  # arm_avgpool_s8 (DSP): int32 per channel
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        il = lambda x: self._scalar("int_list", [int(a) for a in x])  # noqa: E731
        self._emit("cortex_m::quantized_avg_pool2d.out",
                   [v, il(kernel), il(stride), il(padding), self._scalar("bool", False), i(zp_out), i(mult), i(shift),
                    scratch], out, node)
        return out, None

    def _adaptive_avg_pool(self, node, qnode, act):
        """adaptive_avg_pool2d whose windows tile the input (H, W multiples of the output size,
        global pooling among them): an int8 average pool with kernel = stride = H/oh x W/ow."""
        v = self.quant_of(node.args[0])
        if v is None:
            return "input is not int8"
        if act is not None:
            return "adaptive avg pool with a fused activation"
        xt = self.program.tensor(v)
        if len(xt.shape) != 4:
            return "adaptive avg pool of a tensor that is not 4-D"
        (_, _, h, w), (oh, ow) = xt.shape, _shape(node)[2:]
        if h % oh or w % ow:
            return f"adaptive avg pool {h}x{w} -> {oh}x{ow}: windows of different sizes"
        k = [h // oh, w // ow]
        out, why = self._avg_pool_int8(node, qnode, v, k, k, [0, 0])
        if why:
            return why
        self._finish(node, qnode, act, out)
        return None

    def _mean(self, node, qnode, act):
        """mean over H and W of a 4-D tensor (keepdim or not): a global int8 average pool."""
        x, dims = node.args[0], node.args[1]
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        if node.kwargs.get("dtype") is not None or len(node.args) > 3:
            return "mean with a dtype"
        v = self.quant_of(x)
        if v is None:
            return "input is not int8"
        if act is not None:
            return "mean with a fused activation"
        xt = self.program.tensor(v)
        nd = len(xt.shape)
        red = sorted({d % nd for d in (dims or range(nd))})
        order = list(xt.dim_order or range(nd))
        pos = [order.index(d) for d in red]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            return "mean over dimensions that are not adjacent in memory"
        outer = int(np.prod([xt.shape[d] for d in order[:pos[0]]]))
        inner = int(np.prod([xt.shape[d] for d in order[pos[-1] + 1:]]))
        span = int(np.prod([xt.shape[d] for d in red]))
        # the same bytes as an NHWC [outer, inner, span, 1] tensor: a global average pool over H
        v4 = self._alias(v, (outer, inner, span, 1), NHWC, xt.name + "_pool_view")
        out, why = self._avg_pool_int8(node, qnode, v4, [span, 1], [span, 1], [0, 0])
        if why:
            return why
        kept = [d for d in order if d not in red]
        shape = _shape(node)
        if keepdim:
            out_order = tuple(order)
        else:
            renum = {d: k for k, d in enumerate(x for x in range(nd) if x not in red)}
            out_order = tuple(renum[d] for d in kept)
        out_order = None if out_order == tuple(range(len(shape))) else out_order
        out = self._alias(out, shape, out_order, node.name)
        self._finish(node, qnode, act, out)
        return None

    def _softmax(self, node, qnode, act):
        x, dim = node.args[0], node.args[1]
        v = self.quant_of(x)
        if v is None:
            return "input is not int8"
        xt = self.program.tensor(v)
        if dim not in (-1, len(xt.shape) - 1):
            return "softmax over a dimension other than the last"
        v = self._to_nchw(v, node)
        xt = self.program.tensor(v)
        s_out, zp_out = self._qparams(qnode)
        if act is not None or abs(s_out - 1 / 256) > 1e-12 or zp_out != -128:
            return "softmax output must be scale 1/256, zero point -128"
        mult, shift, diff_min = softmax_params(xt.scale)
        out = self._int8(_shape(node), s_out, zp_out, xt.dim_order, qnode.name)
        i = lambda x: self._scalar("int", int(x))  # noqa: E731
        self._emit("cortex_m::softmax.out", [v, i(-1), i(xt.zero_point), i(zp_out), i(mult), i(shift), i(diff_min)],
                   out, node)
        self._finish(node, qnode, act, out)
        return None

    # -- fp32 fallback -----------------------------------------------------------------------------------
    def fallback_op(self, node, reason: str) -> None:
        """An fp32 island: node's int8 inputs dequantized, node decomposed to core ATen and run by
        the target's fp32 kernels (mcu_gen/quantize/islands.py); quantize nodes after it requantize."""
        if node.target is operator.getitem:
            self.fp.lower_call(node)
            self.f[(node, True)] = self.fp.env[node]
            return
        first_ins, first_val = len(self.program.instructions), len(self.program.values)
        activations, constants = {}, {}
        for a in node.all_input_nodes:
            if a.op == "get_attr":
                constants[a] = _attr(self.gm, a)
            elif self.weight(a) is not None:
                constants[a] = a.target(*[(_attr(self.gm, x) if isinstance(x, torch.fx.Node) else x)
                                          for x in a.args])
            elif a in self.fp.env:
                activations[a] = self.fp.env[a]
            else:
                activations[a] = self.fp32_of(a, contiguous=True)
        out = lower_island(self.fp, node, activations, constants)
        self.fp.env[node] = out
        self.f[(node, True)] = out
        if node.target in VIEW_OPS or node.target in NOOP_OPS:
            return
        new_values = [v for v in self.program.values[first_val:] if isinstance(v, TensorValue) and not v.is_constant]
        self.fallback.append({
            "op": op_name(node.target) if isinstance(node.target, torch._ops.OpOverload) else str(node.target),
            "reason": reason, "source": source_line(node, self.user_file),
            "kernels": [ins.op for ins in self.program.instructions[first_ins:]],
            "fp32_bytes": sum(v.nbytes for v in new_values if v.dtype == "float32"),
            "constant_bytes": sum(v.nbytes for v in self.program.values[first_val:]
                                  if isinstance(v, TensorValue) and v.is_constant)})

    def quantize_node(self, node) -> None:
        x = node.args[0]
        scale, zp = self._qparams(node)
        if x.op == "placeholder" and self.io == "int8" and (x, True) not in self.f:  # (an fp32 state: quantized here)
            raise AssertionError("handled with the inputs")
        if x in self.q and (x, True) not in self.f and (x, False) not in self.f:
            self.q[node] = self._requantize(self.q[x], scale, zp, node)  # int8 -> int8 by a table
            return
        v = self.fp32_of(x, contiguous=(x, True) in self.f or x.op != "placeholder")
        t = self.program.tensor(v)
        out = self.program.add(TensorValue(t.shape, "int8", dim_order=t.dim_order, name=node.name, scale=scale,
                                           zero_point=zp))
        self._emit("cortex_m::quantize_per_tensor.out", [v] + self._quant_args(scale, zp), out, node)
        self.q[node] = self._to_nhwc(out, node) if len(t.shape) == 4 else out

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
            if t in DQ_CHANNEL_OPS:
                continue
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
        elif self.io == "int8":
            params = {self._qparams(u) for u in users} if quantized else set()
            if len(params) != 1:
                raise QuantLoweringError(f"input {node.name}: --io int8 needs the input to be quantized once "
                                         f"(it feeds {', '.join(u.name for u in users)})")
            scale, zp = params.pop()
            v = self._int8(shape, scale, zp, NHWC if len(shape) == 4 else None, node.name)
            for u in users:
                self.q[u] = v
        else:
            dim_order = NHWC if (quantized and len(shape) == 4) else None
            v = self.program.add(TensorValue(shape, "float32", dim_order=dim_order, name=node.name))
            self.f[(node, dim_order is None)] = v
            if dim_order is None or not _nontrivial_nhwc(shape):
                self.f[(node, True)] = v
                self.f[(node, False)] = v
            self.fp.env[node] = v
        self.program.inputs.append(v)

    # -- state (mutable buffers) ---------------------------------------------------------------------
    def _state_input(self, node, st) -> None:
        """A state tensor: int8 with the one scale and zero point every reader quantizes it with
        (quantizer.share_state_observers makes them one), its initial value quantized the same way;
        fp32 when something reads it in fp32 (an island) or nothing quantizes it."""
        from mcu_gen.quantize.arith import quantize_f32

        init = st["init"].detach().contiguous().numpy()
        shape = tuple(init.shape)
        users = list(node.users)
        params = {self._qparams(u) for u in users if u.op == "call_function" and u.target in Q_OPS}
        int8 = bool(users) and len(params) == 1 and all(u.op == "call_function" and u.target in Q_OPS for u in users)
        if int8:
            scale, zp = params.pop()
            v = self._int8(shape, scale, zp, NHWC if len(shape) == 4 else None, st["name"])
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
            if not _nontrivial_nhwc(shape):
                self.f[(node, False)] = v
            self.fp.env[node] = v
        self.program.states.append(v)
        self.program.state_names.append(st["name"])

    def _state_update(self, state: int, node) -> None:
        """The end of a run writes the state's new value into it: the instruction computing it
        writes the state itself when it can (export._Lowering._write_in_place), else a copy. An
        int8 state takes an int8 value with its own quantization (a requantization table if the
        value's differs, which share_state_observers avoids), or quantizes an fp32 one."""
        t = self.program.tensor(state)
        if not isinstance(node, torch.fx.Node):
            raise QuantLoweringError(f"the new value of buffer {t.name} is not a tensor")
        if t.dtype == "int8":
            same = [u for u in node.users if u in self.q and u.target in Q_OPS
                    and self._qparams(u) == (t.scale, t.zero_point)]
            if node in self.q or same:  # int8 already (an fp32 value that another reader quantized the same way)
                src = self._requantize(self.q[node if node in self.q else same[0]], t.scale, t.zero_point, node)
                src = self._to_nhwc(src, node) if len(t.shape) == 4 else self._contig(src, node)
            else:
                f = self.fp32_of(node, contiguous=True)
                ft = self.program.tensor(f)
                src = self.program.add(TensorValue(ft.shape, "int8", name=t.name + "_new", scale=t.scale,
                                                   zero_point=t.zero_point))
                self._emit("cortex_m::quantize_per_tensor.out", [f] + self._quant_args(t.scale, t.zero_point), src,
                           node)
        else:
            src = self.fp32_of(node, contiguous=True)
        root = self.fp._root(src)
        if root == state:
            return
        s, r = self.program.tensor(src), self.program.tensor(root)
        if (root != src and (r.shape, r.dtype) == (s.shape, s.dtype) and self._is_contiguous(r)
                and self._is_contiguous(s)):
            src, s = root, r  # a view with the same bytes and shape: its source can write the state
        if s.shape != t.shape or s.dtype != t.dtype or (s.dim_order or None) != (t.dim_order or None):
            raise QuantLoweringError(f"buffer {t.name}: the model writes a {s.dtype} {list(s.shape)} value into a "
                                     f"{t.dtype} {list(t.shape)} buffer")
        if self.fp._write_in_place(state, src):
            return
        self._emit("aten::clone.out", [src, self._scalar("none")], state, node)

    def _output(self, node) -> int:
        if self.io == "int8" and node in self.q:
            v = self.q[node]
            if len(self.program.tensor(v).shape) != 4:
                v = self._contig(v)
        elif node in self.q:
            v = self.fp32_of(node, contiguous=len(self.program.tensor(self.q[node]).shape) != 4)
        elif (node, True) in self.f:
            v = self.f[(node, True)]
        else:
            raise QuantLoweringError(f"output {node}: not produced by the program")
        root = v
        while root in self.aliases:
            root = self.aliases[root]
        if root in self.program.inputs:
            raise QuantLoweringError("a model output that is its input is not supported")
        return v


def lower_quantized(gm: torch.fx.GraphModule, io: str = "float32", user_file=None,
                    has_kernel: Optional[Callable[[str], bool]] = None) -> Program:
    """Lower a converted PT2E GraphModule to an int8 IR Program (unplanned)."""
    return QuantLowering(gm, io, user_file, has_kernel).lower()
