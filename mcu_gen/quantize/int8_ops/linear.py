"""int8 lowering handlers: matrix products: linear (fully connected) and matmul / bmm / mm.

Each handler gets the lowering (mcu_gen/quantize/lowering.py's QuantLowering, `lw`), the fx node,
its quantize node and the activation fused into it (or None); it returns None when it lowered
the pattern, else the reason it cannot (the node then runs as an fp32 island)."""
from __future__ import annotations

import numpy as np

from mcu_gen.quantize.int8_common import aten, quantize_multiplier, shape_of
from mcu_gen.quantize.int8_ops.registry import handler


@handler(aten.matmul.default, aten.bmm.default, aten.mm.default)
def matmul(lw, node, qnode, act):
    """Two int8 activations: cortex_m::quantized_batch_matmul (rhs read transposed)."""
    a_node, b_node = node.args[0], node.args[1]
    va, vb = lw.quant_of(a_node), lw.quant_of(b_node)
    if va is None or vb is None:
        return "an input is not int8 (a constant operand is a linear layer)"
    if act is not None:
        return "matmul with a fused activation"
    ta, tb = lw.program.tensor(va), lw.program.tensor(vb)
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
    rt = lw.alias(vb, rt_shape, None if rt_order == tuple(range(nd)) else rt_order, tb.name + "_t")
    rt = lw.contig(rt, node)
    lhs = lw.contig(va, node)
    lhs = lw.alias(lhs, (batch, m, k), None, ta.name + "_3d")
    rt = lw.alias(rt, (batch, n, k), None, tb.name + "_t3d")
    s_out, zp_out = lw.qparams(qnode)
    mult, shift = quantize_multiplier(ta.scale * tb.scale / s_out)
    out = lw.int8_tensor((batch, m, n), s_out, zp_out, None, qnode.name)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    lw.emit("cortex_m::quantized_batch_matmul.out",
             [lhs, i(-ta.zero_point), rt, i(-tb.zero_point), i(zp_out), i(mult), i(shift),
                lw.scratch(0, f"{node.name}_scratch")], out, node)
    out = lw.alias(out, shape_of(node), None, qnode.name + "_view")
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.linear.default)
def linear(lw, node, qnode, act):
    x, wn = node.args[0], node.args[1]
    bn = node.args[2] if len(node.args) > 2 else None
    v = lw.quant_of(x)
    wq = lw.weight(wn)
    if v is None or wq is None:
        return "input or weight is not int8"
    w, w_scales, w_zps = wq
    if np.any(w_zps != 0):
        return "weights are not symmetric"
    if not np.all(w_scales == w_scales[0]):
        return "per-channel linear weights (cortex_m::quantized_linear takes one multiplier)"
    if v not in lw.nhwc_flat:
        v = lw.contig(v, node)
    xt = lw.program.tensor(v)
    if v in lw.nhwc_flat:
        c, h, wd = lw.nhwc_flat[v]
        w = w.reshape(w.shape[0], c, h, wd).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
    s_out, zp_out = lw.qparams(qnode)
    mult, shift = quantize_multiplier(xt.scale * float(w_scales[0]) / s_out)
    # The kernel writes rows of features: a 4-dim output (a linear over channels-last data, as in
    # ConvNeXt's blocks) is in logical order, not the channels-last order of the convolutions' outputs.
    oshape = shape_of(node)
    out = lw.int8_tensor(oshape, s_out, zp_out, tuple(range(4)) if len(oshape) == 4 else None, qnode.name)
    bias = lw.bias(bn, xt.scale, w_scales, f"{node.name}_bias")
    lo, hi = lw.act_range(act, s_out, zp_out)
    # The kernel sum bias + input_offset * sum(w) (ExecuTorch's form; the weights are symmetric)
    # replaces the bias: CMSIS-NN's MVE fully-connected reads it instead of summing the
    # weights on every call, and the DSP one skips the input offset (docs/cmsis_nn.md).
    ksum = w.astype(np.int64).sum(axis=1) * -xt.zero_point
    if bias is not None:
        ksum = ksum + lw.program.tensor(bias).data.astype(np.int64)
    if np.all(np.abs(ksum) < 2**31):
        bias, kernel_sum = None, lw.constant(ksum, "int32", f"{node.name}_kernel_sum")
    else:
        kernel_sum = lw.scalar("none")
    a = [v, lw.constant(w, "int8", f"{node.name}_weight"), bias if bias is not None else lw.scalar("none"),
         kernel_sum, lw.scalar("int", -xt.zero_point), lw.scalar("int", 0),
         lw.scalar("int", zp_out), lw.scalar("int_list", [mult]), lw.scalar("int_list", [shift]),
         lw.scalar("int", hi), lw.scalar("int", lo)]
    lw.emit("cortex_m::quantized_linear.out", a, out, node)
    lw.finish(node, qnode, act, out)
    return None
