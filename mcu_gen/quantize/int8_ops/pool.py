"""int8 lowering handlers: pooling and reductions: max / average / adaptive average pooling, mean, sum.

Each handler gets the lowering (mcu_gen/quantize/lowering.py's QuantLowering, `lw`), the fx node,
its quantize node and the activation fused into it (or None); it returns None when it lowered
the pattern, else the reason it cannot (the node then runs as an fp32 island)."""
from __future__ import annotations

import numpy as np

from mcu_gen.program.ir import TensorValue
from mcu_gen.quantize.int8_common import (INT8_MAX, INT8_MIN, NHWC, QuantLoweringError, aten, conv_scratch_bytes,
                                          pool_geometry, quantize_multiplier, shape_of)
from mcu_gen.quantize.int8_ops.conv import as_3d, as_4d
from mcu_gen.quantize.int8_ops.registry import handler


def _pool_args(lw, node, n_defaults):
    return list(node.args) + [None] * (n_defaults - len(node.args))


POOL_1D = (aten.max_pool1d.default, aten.avg_pool1d.default, aten.adaptive_avg_pool1d.default)


def _one_d(values, default: int) -> int:
    """A 1-D pool's int[1] argument (a list, a bare int, or empty / None: the default) as an int."""
    if values is None or (isinstance(values, (list, tuple)) and not values):
        return default
    return int(values[0] if isinstance(values, (list, tuple)) else values)


def _pool_geometry_1d(kernel, stride, padding, dilation=None):
    """A 1-D pool over [N, C, L] as a 1 x k 2-D pool over [N, C, 1, L]: kernel, stride, padding, dilation."""
    k = _one_d(kernel, 1)
    return [1, k], [1, _one_d(stride, k)], [0, _one_d(padding, 0)], [1, _one_d(dilation, 1)]


def _pool_input(lw, node, v: int) -> int:
    """A pool's int8 input as 4-D channels-last: a 1-D pool's [N, C, L] as [N, C, 1, L] (a Conv1d's output already
    is, conv.as_4d: no transpose)."""
    if node.target in POOL_1D:
        v = as_4d(lw, v)
    return lw.to_nhwc(v, node)


def _pool_output_shape(node) -> tuple:
    """The 4-D output shape of a pool: a 1-D pool's [N, C, L'] as [N, C, 1, L']."""
    shape = shape_of(node)
    return (shape[0], shape[1], 1, shape[2]) if node.target in POOL_1D else shape


def _pool_result(lw, node, qnode, out: int) -> int:
    """A pool's 4-D channels-last result as the node's shape: a 1-D pool's [N, C, 1, L'] is [N, C, L'] with dim
    order (0, 2, 1), as a Conv1d's."""
    return as_3d(lw, out, shape_of(node), qnode.name) if node.target in POOL_1D else out


@handler(aten.max_pool2d.default, aten.max_pool1d.default)
def max_pool(lw, node, qnode, act):
    x, kernel, stride, padding, dilation, ceil_mode = _pool_args(lw, node, 6)
    if node.target is aten.max_pool1d.default:
        kernel, stride, padding, dilation = _pool_geometry_1d(kernel, stride, padding, dilation)
    else:
        kernel, stride, padding = pool_geometry(kernel, stride, padding)
        dilation = list(dilation) if dilation else [1, 1]
        dilation = dilation * 2 if len(dilation) == 1 else dilation
    if dilation != [1, 1]:
        return "max pool with dilation"
    v = lw.quant_of(x)
    if v is None:
        return "input is not int8"
    v = _pool_input(lw, node, v)
    xt = lw.program.tensor(v)
    oshape = _pool_output_shape(node)
    if ceil_mode:  # the windows past the end: pad bottom/right with -128 (never the max)
        n, c, h, w = xt.shape
        oh, ow = oshape[2:]
        eh = max(0, (oh - 1) * stride[0] + kernel[0] - h - 2 * padding[0])
        ew = max(0, (ow - 1) * stride[1] + kernel[1] - w - 2 * padding[1])
        if eh or ew:
            padded = lw.int8_tensor((n, c, h + eh, w + ew), xt.scale, xt.zero_point, NHWC, xt.name + "_ceil")
            il = lambda x: lw.scalar("int_list", [int(a) for a in x])  # noqa: E731
            lw.emit("cortex_m::pad.out", [v, il([0, 0, 0, 0]), il([0, eh, ew, 0]),
                                           lw.scalar("int", INT8_MIN)], padded, node)
            v, xt = padded, lw.program.tensor(padded)
    s_out, zp_out = lw.qparams(qnode)
    if zp_out != xt.zero_point or s_out != xt.scale:
        return "output quantization differs from the input's"
    lo, hi = lw.act_range(act, s_out, zp_out)
    out = lw.int8_tensor(oshape, s_out, zp_out, NHWC, qnode.name)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    il = lambda x: lw.scalar("int_list", [int(a) for a in x])  # noqa: E731
    lw.emit("cortex_m::quantized_max_pool2d.out",
             [v, il(kernel), il(stride), il(padding), il(dilation), lw.scalar("bool", False),
                i(xt.zero_point), i(zp_out), i(lo), i(hi)], out, node)
    lw.finish(node, qnode, act, _pool_result(lw, node, qnode, out))
    return None


@handler(aten.avg_pool2d.default, aten.avg_pool1d.default)
def avg_pool(lw, node, qnode, act):
    x, kernel, stride, padding, ceil_mode, count_include_pad, divisor = _pool_args(lw, node, 7)
    if node.target is aten.avg_pool1d.default:
        kernel, stride, padding, _ = _pool_geometry_1d(kernel, stride, padding)
    else:
        kernel, stride, padding = pool_geometry(kernel, stride, padding)
    if divisor is not None or act is not None:
        return "avg pool with divisor_override or a fused activation"
    if any(padding) and count_include_pad is not False:
        return "padded avg pool that counts the padding"
    v = lw.quant_of(x)
    if v is None:
        return "input is not int8"
    v = _pool_input(lw, node, v)
    xt = lw.program.tensor(v)
    oshape = _pool_output_shape(node)
    s_out, zp_out = lw.qparams(qnode)
    if zp_out != xt.zero_point or s_out != xt.scale:
        oh, ow = oshape[2:]
        overhang = any((o - 1) * st + k > n + 2 * p for o, st, k, n, p in
                       zip((oh, ow), stride, kernel, xt.shape[2:], padding))
        if not overhang and (not any(padding) or count_include_pad is not False):
            out = _average_as_depthwise(lw, node, qnode, v, kernel, stride, padding)
        else:  # windows of different sizes: the average at the input's parameters, then a table
            same = _emit_avg_pool(lw, node, v, kernel, stride, padding, ceil_mode, xt.scale, xt.zero_point,
                                  oshape, qnode.name + "_avg")
            out = lw.requantize(same, s_out, zp_out, node)
        lw.finish(node, qnode, act, _pool_result(lw, node, qnode, out))
        return None
    out = _emit_avg_pool(lw, node, v, kernel, stride, padding, ceil_mode, s_out, zp_out, oshape, qnode.name)
    lw.finish(node, qnode, act, _pool_result(lw, node, qnode, out))
    return None


def _emit_avg_pool(lw, node, v, kernel, stride, padding, ceil_mode, s_out, zp_out, oshape, name):
    """cortex_m::quantized_avg_pool2d of NHWC int8 value v; its output has v's parameters (s_out, zp_out)."""
    xt = lw.program.tensor(v)
    mult, shift = quantize_multiplier(xt.scale)
    out = lw.int8_tensor(oshape, s_out, zp_out, NHWC, name)
    scratch = lw.scratch(xt.shape[1] * 4, f"{node.name}_scratch")  # arm_avgpool_s8 (DSP): int32 per channel
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    il = lambda x: lw.scalar("int_list", [int(a) for a in x])  # noqa: E731
    lw.emit("cortex_m::quantized_avg_pool2d.out",
             [v, il(kernel), il(stride), il(padding), lw.scalar("bool", bool(ceil_mode)), i(zp_out), i(mult), i(shift),
              scratch], out, node)
    return out


def _average_as_depthwise(lw, node, qnode, v, kernel, stride, padding):
    """An average whose output has parameters of its own (its range is narrower than its input's):
    a depthwise convolution with a weight of ones, every window holding kh * kw taps (no windows past
    the end; zero padding counted, as count_include_pad does): int32 sums of (code - input zero point)
    requantized by s_in / (kh * kw * s_out), in one rounding. The cost: a weight of C * kh * kw bytes."""
    xt = lw.program.tensor(v)
    s_out, zp_out = lw.qparams(qnode)
    n, c, h, w = xt.shape
    oh = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
    ow = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
    mult, shift = quantize_multiplier(xt.scale / (kernel[0] * kernel[1] * s_out))
    out = lw.int8_tensor((n, c, oh, ow), s_out, zp_out, NHWC, qnode.name)
    ones = np.ones((1, kernel[0], kernel[1], c), np.int8)  # IHWO
    scratch = lw.scratch(conv_scratch_bytes(xt.shape, (c, 1, kernel[0], kernel[1]), stride, padding, [1, 1], True),
                         f"{node.name}_scratch")
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    il = lambda x: lw.scalar("int_list", [int(a) for a in x])  # noqa: E731
    lw.emit("cortex_m::quantized_depthwise_conv2d.out",
            [v, lw.constant(ones, "int8", f"{node.name}_ones"), lw.scalar("none"), il(stride), il(padding),
             il([1, 1]), i(1), i(-xt.zero_point), i(zp_out),
             lw.constant(np.full(c, mult), "int32", f"{node.name}_multipliers"),
             lw.constant(np.full(c, shift), "int32", f"{node.name}_shifts"), i(INT8_MIN), i(INT8_MAX), scratch],
            out, node)
    return out


def _avg_pool_int8(lw, node, qnode, v, kernel, stride, padding):
    """An int8 average pool of value v: cortex_m::quantized_avg_pool2d when the output keeps v's
    parameters, else a depthwise convolution with a weight of ones (_average_as_depthwise)."""
    v = lw.to_nhwc(v, node)
    xt = lw.program.tensor(v)
    s_out, zp_out = lw.qparams(qnode)
    if zp_out != xt.zero_point or s_out != xt.scale:
        return _average_as_depthwise(lw, node, qnode, v, kernel, stride, padding), None
    n, c, h, w = xt.shape
    oh = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
    ow = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
    mult, shift = quantize_multiplier(xt.scale)
    out = lw.int8_tensor((n, c, oh, ow), s_out, zp_out, NHWC, qnode.name)
    scratch = lw.scratch(c * 4, f"{node.name}_scratch")  # arm_avgpool_s8 (DSP): int32 per channel
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    il = lambda x: lw.scalar("int_list", [int(a) for a in x])  # noqa: E731
    lw.emit("cortex_m::quantized_avg_pool2d.out",
             [v, il(kernel), il(stride), il(padding), lw.scalar("bool", False), i(zp_out), i(mult), i(shift),
                scratch], out, node)
    return out, None


@handler(aten.adaptive_avg_pool2d.default, aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool1d.default)
def adaptive_avg_pool(lw, node, qnode, act):
    """adaptive_avg_pool2d (1d) whose windows tile the input (H, W (L) multiples of the output size,
    global pooling among them): an int8 average pool with kernel = stride = H/oh x W/ow (1 x L/ol)."""
    v = lw.quant_of(node.args[0])
    if v is None:
        return "input is not int8"
    if act is not None:
        return "adaptive avg pool with a fused activation"
    v = _pool_input(lw, node, v) if node.target is aten.adaptive_avg_pool1d.default else v
    xt = lw.program.tensor(v)
    if len(xt.shape) != 4:
        return "adaptive avg pool of a tensor that is not 4-D"
    (_, _, h, w), (oh, ow) = xt.shape, _pool_output_shape(node)[2:]
    if h % oh or w % ow:
        return f"adaptive avg pool {h}x{w} -> {oh}x{ow}: windows of different sizes"
    k = [h // oh, w // ow]
    out, why = _avg_pool_int8(lw, node, qnode, v, k, k, [0, 0])
    if why:
        return why
    lw.finish(node, qnode, act, _pool_result(lw, node, qnode, out))
    return None


@handler(aten.mean.dim)
def mean(lw, node, qnode, act):
    """mean over H and W of a 4-D tensor (keepdim or not): a global int8 average pool."""
    x, dims = node.args[0], node.args[1]
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    if node.kwargs.get("dtype") is not None or len(node.args) > 3:
        return "mean with a dtype"
    v = lw.quant_of(x)
    if v is None:
        return "input is not int8"
    if act is not None:
        return "mean with a fused activation"
    xt = lw.program.tensor(v)
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
    v4 = lw.alias(v, (outer, inner, span, 1), NHWC, xt.name + "_pool_view")
    out, why = _avg_pool_int8(lw, node, qnode, v4, [span, 1], [span, 1], [0, 0])
    if why:
        return why
    kept = [d for d in order if d not in red]
    shape = shape_of(node)
    if keepdim:
        out_order = tuple(order)
    else:
        renum = {d: k for k, d in enumerate(x for x in range(nd) if x not in red)}
        out_order = tuple(renum[d] for d in kept)
    out_order = None if out_order == tuple(range(len(shape))) else out_order
    out = lw.alias(out, shape, out_order, node.name)
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.sum.dim_IntList, aten.sum.default)
def sum_dims(lw, node, qnode, act):
    """sum over dims, output parameters of its own: the reduced dims brought last (a transpose
    unless they are already), then a fully connected layer with one row of ones over them,
    cortex_m::quantized_linear: int32 sums of (code - zero point), requantized by s_in / s_out."""
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if node.target is aten.sum.default:
        dims = None  # all of them
    if node.kwargs.get("dtype") is not None or len(node.args) > 3:
        return "sum with a dtype"
    v = lw.quant_of(node.args[0])
    if v is None:
        return "input is not int8"
    if act is not None:
        return "sum with a fused activation"
    v = lw.to_nchw(v, node)  # logical (row-major) order
    xt = lw.program.tensor(v)
    nd = len(xt.shape)
    red = sorted({d % nd for d in (dims or range(nd))})
    kept = [d for d in range(nd) if d not in red]
    span = int(np.prod([xt.shape[d] for d in red]))
    rows = int(np.prod([xt.shape[d] for d in kept]))
    s_out, zp_out = lw.qparams(qnode)
    try:
        mult, shift = quantize_multiplier(xt.scale / s_out)
    except QuantLoweringError as e:
        return str(e)
    if kept + red != list(range(nd)):
        perm = kept + red
        moved = lw.program.add(TensorValue(tuple(xt.shape[d] for d in perm), "int8", name=xt.name + "_sum_order",
                                           scale=xt.scale, zero_point=xt.zero_point))
        lw.emit("cortex_m::transpose.out", [v, lw.scalar("int_list", perm)], moved, node)
        v = moved
    x2 = lw.alias(v, (rows, span), None, xt.name + "_rows")
    ones = np.ones((1, span), np.int8)
    out = lw.int8_tensor((rows, 1), s_out, zp_out, None, qnode.name + "_sums")
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    lw.emit("cortex_m::quantized_linear.out",
            [x2, lw.constant(ones, "int8", f"{node.name}_ones"), lw.scalar("none"),
             lw.constant(np.array([-xt.zero_point * span], np.int64), "int32", f"{node.name}_kernel_sum"),
             i(-xt.zero_point), i(0), i(zp_out), lw.scalar("int_list", [mult]), lw.scalar("int_list", [shift]),
             i(127), i(-128)], out, node)
    lw.finish(node, qnode, act, lw.alias(out, shape_of(node), None, qnode.name))
    return None
