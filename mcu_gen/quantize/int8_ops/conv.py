"""int8 lowering handlers: convolutions: conv1d/conv2d (regular and depthwise) and transposed conv2d.

Each handler gets the lowering (mcu_gen/quantize/lowering.py's QuantLowering, `lw`), the fx node,
its quantize node and the activation fused into it (or None); it returns None when it lowered
the pattern, else the reason it cannot (the node then runs as an fp32 island)."""
from __future__ import annotations

import numpy as np

from mcu_gen.quantize.int8_common import NHWC, aten, conv_scratch_bytes, quantize_multiplier, shape_of
from mcu_gen.quantize.int8_ops.registry import handler


@handler(aten.conv2d.default, aten.conv1d.default, aten.conv2d.padding, aten.conv1d.padding)
def conv(lw, node, qnode, act):
    args = list(node.args) + [None] * (7 - len(node.args))
    x, wn, bn, stride, padding, dilation, groups = args
    one_d = node.target in (aten.conv1d.default, aten.conv1d.padding)
    stride = list(stride or [1, 1])
    padding = padding if padding is not None else [0, 0]
    dilation = list(dilation or [1, 1])
    groups = groups or 1
    if isinstance(padding, str):  # conv2d.padding / conv1d.padding: 'valid' or 'same' (stride 1)
        wq = lw.weight(wn)
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
    v = lw.quant_of(x)
    wq = lw.weight(wn)
    if v is None or wq is None:
        return "input or weight is not int8"
    w, w_scales, w_zps = wq
    if np.any(w_zps != 0):
        return "weights are not symmetric"
    oshape = shape_of(node)
    out_shape = oshape if not one_d else (oshape[0], oshape[1], 1, oshape[2])
    if one_d:
        v = as_4d(lw, v)
        w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
    v = lw.to_nhwc(v, node)
    if one_d and _dilation_folds(lw.program.tensor(v).shape[3], stride, padding, dilation):
        v, w, out_shape, padding, dilation = _fold_dilation(lw, v, w, out_shape, padding, dilation)
    xt = lw.program.tensor(v)
    s_out, zp_out = lw.qparams(qnode)
    cin, cout = xt.shape[1], w.shape[0]
    depthwise = groups > 1 and groups == cin and cout % cin == 0
    mults, shifts = zip(*[quantize_multiplier(xt.scale * float(s) / s_out) for s in w_scales])
    out = lw.int8_tensor(out_shape, s_out, zp_out, NHWC, qnode.name)
    bias = lw.bias(bn, xt.scale, w_scales, f"{node.name}_bias")
    lo, hi = lw.act_range(act, s_out, zp_out)
    if depthwise:
        wt = w.transpose(1, 2, 3, 0)  # [O,1,kh,kw] -> IHWO [1,kh,kw,O]
        name = "cortex_m::quantized_depthwise_conv2d.out"
    else:
        wt = w.transpose(0, 2, 3, 1)  # OIHW -> OHWI
        name = "cortex_m::quantized_conv2d.out"
    scratch = lw.scratch(conv_scratch_bytes(xt.shape, w.shape, stride, padding, dilation, depthwise),
                          f"{node.name}_scratch")
    a = [v, lw.constant(wt, "int8", f"{node.name}_weight"),
         bias if bias is not None else lw.scalar("none"),
         lw.scalar("int_list", stride), lw.scalar("int_list", padding), lw.scalar("int_list", dilation)]
    if depthwise:
        a.append(lw.scalar("int", cout // cin))
    a += [lw.scalar("int", -xt.zero_point), lw.scalar("int", zp_out),
          lw.constant(np.array(mults), "int32", f"{node.name}_multipliers"),
          lw.constant(np.array(shifts), "int32", f"{node.name}_shifts"),
          lw.scalar("int", lo), lw.scalar("int", hi), scratch]
    lw.emit(name, a, out, node)
    if one_d:  # [N, O, 1, L] (or [N, O, L / d, d]) channels-last is [N, O, L] with dim_order (0, 2, 1)
        out = as_3d(lw, out, oshape, qnode.name)
    lw.finish(node, qnode, act, out)
    return None


def _dilation_folds(length: int, stride, padding, dilation) -> bool:
    """Whether a dilated Conv1d (as a 1 x k conv2d over [N, C, 1, L]) is a k x 1 conv2d without dilation over
    [N, C, L / d, d] (_fold_dilation): stride 1, and the padding and the length multiples of the dilation d."""
    d = dilation[1]
    return d > 1 and stride == [1, 1] and padding[1] % d == 0 and length % d == 0


def _fold_dilation(lw, v: int, w, out_shape, padding, dilation):
    """A Conv1d of dilation d over channels-last [N, C, 1, L] as a k x 1 conv2d without dilation over the same
    bytes seen as the image [N, C, L / d, d]: input position m d + r is pixel (m, r), and tap j of output m d + r
    reads position (m + j) d + r - p, pixel (m + j - p / d, r): the kernel runs down the columns, padding p / d
    rows. The output [N, O, L' / d, d] is the output [N, O, 1, L'] in the same bytes. Every kernel (portable,
    CMSIS-NN, generated) then runs it as a plain convolution. Returns the new input, weights, output shape,
    padding and dilation."""
    d = dilation[1]
    t = lw.program.tensor(v)
    n, c, _, length = t.shape
    folded = lw.alias(v, (n, c, length // d, d), NHWC, t.name + f"_by{d}")
    w = w.reshape(w.shape[0], w.shape[1], w.shape[3], 1)  # [O, I, 1, k] -> [O, I, k, 1]
    out_shape = (out_shape[0], out_shape[1], out_shape[3] // d, d)
    return folded, w, out_shape, [padding[1] // d, 0], [1, 1]


def as_3d(lw, v: int, shape, name: str) -> int:
    """A 4-D channels-last [N, C, 1, L] int8 value (a Conv1d's or 1-D pool's result) as the 3-D [N, C, L] of
    `shape`, dim order (0, 2, 1) (free: same bytes); as_4d's inverse."""
    return lw.alias(v, tuple(shape), (0, 2, 1), name + "_1d")


def as_4d(lw, v: int) -> int:
    """A 3-D [N, C, L] int8 value as the 4-D [N, C, 1, L] (free: same bytes)."""
    t = lw.program.tensor(v)
    n, c, length = t.shape
    if t.dim_order == (0, 2, 1):
        return lw.alias(v, (n, c, 1, length), NHWC, t.name + "_4d")
    v = lw.contig(v)
    return lw.alias(v, (n, c, 1, length), (0, 1, 2, 3), t.name + "_4d")


@handler(aten.conv_transpose2d.input)
def conv_transpose(lw, node, qnode, act):
    args = list(node.args) + [None] * (8 - len(node.args))
    x, wn, bn, stride, padding, output_padding, groups, dilation = args
    stride, padding = list(stride or [1, 1]), list(padding or [0, 0])
    output_padding, dilation = list(output_padding or [0, 0]), list(dilation or [1, 1])
    stride, padding, output_padding, dilation = [s * 2 if len(s) == 1 else s for s in
                                                 (stride, padding, output_padding, dilation)]
    if (groups or 1) != 1:
        return "grouped transposed convolution"
    v = lw.quant_of(x)
    wq = lw.weight(wn, axis=1)
    if v is None or wq is None:
        return "input or weight is not int8 (per output channel)"
    w, w_scales, w_zps = wq
    if np.any(w_zps != 0):
        return "weights are not symmetric"
    v = lw.to_nhwc(v, node)
    xt = lw.program.tensor(v)
    s_out, zp_out = lw.qparams(qnode)
    mults, shifts = zip(*[quantize_multiplier(xt.scale * float(s) / s_out) for s in w_scales])
    out = lw.int8_tensor(shape_of(node), s_out, zp_out, NHWC, qnode.name)
    bias = lw.bias(bn, xt.scale, w_scales, f"{node.name}_bias")
    lo, hi = lw.act_range(act, s_out, zp_out)
    wt = w.transpose(1, 2, 3, 0)  # [Cin, Cout, kh, kw] -> OHWI [Cout, kh, kw, Cin]
    il = lambda x: lw.scalar("int_list", [int(a) for a in x])  # noqa: E731
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    a = [v, lw.constant(wt, "int8", f"{node.name}_weight"), bias if bias is not None else lw.scalar("none"),
         il(stride), il(padding), il(output_padding), il(dilation), i(-xt.zero_point), i(zp_out),
         lw.constant(np.array(mults), "int32", f"{node.name}_multipliers"),
         lw.constant(np.array(shifts), "int32", f"{node.name}_shifts"), i(lo), i(hi),
         lw.scratch(0, f"{node.name}_scratch"), lw.scratch(0, f"{node.name}_output_scratch")]
    lw.emit("cortex_m::quantized_transpose_conv2d.out", a, out, node)
    lw.finish(node, qnode, act, out)
    return None
