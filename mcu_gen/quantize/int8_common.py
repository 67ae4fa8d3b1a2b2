"""What the int8 lowering (lowering.py) and its per-operator handlers (int8_ops/) share: the
quantized_decomposed operator sets, the fixed-point parameters (Q31 multipliers and shifts of
TFLite / CMSIS-NN), the activation lookup tables and small helpers on fx nodes."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.fx
import torchao.quantization.pt2e  # noqa: F401  (registers the quantized_decomposed operators)

from mcu_gen.capture.export import UnsupportedOperatorError

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


def get_attr_value(gm, node):
    obj = gm
    for part in node.target.split("."):
        obj = getattr(obj, part)
    return obj.detach() if isinstance(obj, torch.Tensor) else obj


def pool_geometry(kernel, stride, padding) -> tuple:
    """ATen's pool kernel_size, stride (empty: the kernel size) and padding as [h, w] lists."""
    kernel = list(kernel)
    kernel = kernel * 2 if len(kernel) == 1 else kernel
    stride = list(stride) if stride else kernel
    stride = stride * 2 if len(stride) == 1 else stride
    padding = list(padding) if padding is not None else [0, 0]
    padding = padding * 2 if len(padding) == 1 else padding
    return kernel, stride, padding


def shape_of(node) -> tuple:
    return tuple(int(s) for s in node.meta["val"].shape)


def nontrivial_nhwc(shape) -> bool:
    """True when NCHW and NHWC memory orders of this shape differ."""
    return len(shape) == 4 and shape[1] > 1 and shape[2] * shape[3] > 1


def activation_bounds(node) -> tuple[float, float]:
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
    with np.errstate(over="ignore"):  # codes outside fn's domain (rsqrt(0)): y * (1 / scale) is inf, then clamped
        return np.clip(quantize_f32(y, out_scale, out_zp), lo, hi).astype(np.int8)


ACTIVATIONS = {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default,
               aten.hardtanh_.default, aten.clamp.default}
PERMUTE_OPS = {aten.transpose.int, aten.permute.default, aten.t.default}  # free: a view with another dim_order
VIEW_OPS = {aten.flatten.using_ints, aten.view.default, aten.reshape.default, aten.squeeze.dim, aten.squeeze.dims,
            aten.unsqueeze.default, aten._unsafe_view.default, aten.unflatten.int}
# the same values (contiguous: the same logical tensor, its memory order is the lowering's own business)
NOOP_OPS = {aten.dropout.default, aten.clone.default, aten.alias.default, aten.detach.default, aten.contiguous.default}


def pad_mode_and_value(node):
    """(mode, constant value) of an aten.pad / aten.constant_pad_nd node."""
    if node.target is aten.constant_pad_nd.default:
        value = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
        return "constant", 0.0 if value is None else float(value)
    mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
    value = node.args[3] if len(node.args) > 3 else node.kwargs.get("value", None)
    return mode, 0.0 if value is None else float(value)
