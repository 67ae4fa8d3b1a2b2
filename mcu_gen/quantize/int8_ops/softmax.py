"""int8 lowering handlers: softmax over the last dimension (CMSIS-NN arm_softmax_s8).

Each handler gets the lowering (mcu_gen/quantize/lowering.py's QuantLowering, `lw`), the fx node,
its quantize node and the activation fused into it (or None); it returns None when it lowered
the pattern, else the reason it cannot (the node then runs as an fp32 island)."""
from __future__ import annotations

from mcu_gen.quantize.int8_common import aten, shape_of, softmax_params
from mcu_gen.quantize.int8_ops.registry import handler


@handler(aten.softmax.int, aten._softmax.default)
def softmax(lw, node, qnode, act):
    x, dim = node.args[0], node.args[1]
    v = lw.quant_of(x)
    if v is None:
        return "input is not int8"
    xt = lw.program.tensor(v)
    if dim not in (-1, len(xt.shape) - 1):
        return "softmax over a dimension other than the last"
    v = lw.to_nchw(v, node)
    xt = lw.program.tensor(v)
    s_out, zp_out = lw.qparams(qnode)
    if act is not None or abs(s_out - 1 / 256) > 1e-12 or zp_out != -128:
        return "softmax output must be scale 1/256, zero point -128"
    mult, shift, diff_min = softmax_params(xt.scale)
    out = lw.int8_tensor(shape_of(node), s_out, zp_out, xt.dim_order, qnode.name)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    lw.emit("cortex_m::softmax.out", [v, i(-1), i(xt.zero_point), i(zp_out), i(mult), i(shift), i(diff_min)],
             out, node)
    lw.finish(node, qnode, act, out)
    return None
