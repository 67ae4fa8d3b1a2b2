"""int8 lowering handlers: elementwise: add/sub and mul of two tensors, PReLU, and every one-tensor function as a
lookup table. add and mul register before the table, which also takes add/mul by a number.

Each handler gets the lowering (mcu_gen/quantize/lowering.py's QuantLowering, `lw`), the fx node,
its quantize node and the activation fused into it (or None); it returns None when it lowered
the pattern, else the reason it cannot (the node then runs as an fp32 island)."""
from __future__ import annotations

import torch

import numpy as np

from mcu_gen.program.ir import TensorValue
from mcu_gen.quantize.int8_common import (NHWC, activation_lut, add_params, aten, get_attr_value, is_lut_node,
                                          quantize_multiplier, shape_of)
from mcu_gen.quantize.int8_ops.registry import handler


def two_tensors(node) -> bool:
    """add/sub/mul of two tensors (by a number they are a lookup table)."""
    return all(isinstance(a, torch.fx.Node) for a in node.args[:2])


def out_order(lw, shape, *operands):
    """The dim order of a two-tensor op's int8 result: channels-last with 4 dims; otherwise the order of the
    operands of the result's shape when they agree (a Conv1d's [N, C, L] outputs are channels-last, dim order
    (0, 2, 1): their sum stays so, with no transposes around it), else row-major."""
    if len(shape) == 4:
        return NHWC
    orders = {lw.program.tensor(v).dim_order or tuple(range(len(shape)))
              for v in operands if tuple(lw.program.tensor(v).shape) == tuple(shape)}
    order = orders.pop() if len(orders) == 1 else None
    return None if order == tuple(range(len(shape))) else order


@handler(aten.add.Tensor, aten.sub.Tensor, when=two_tensors)
def add(lw, node, qnode, act):
    a_node, b_node = node.args[0], node.args[1]
    if node.kwargs.get("alpha", 1) != 1 or len(node.args) > 2:
        return "add with alpha != 1"
    va, vb = lw.operand_of(a_node), lw.operand_of(b_node)
    if va is None or vb is None or (lw.program.tensor(va).is_constant and lw.program.tensor(vb).is_constant):
        return "an input is not int8"
    va, vb = lw.to_nhwc(va, node), lw.to_nhwc(vb, node)
    ta, tb = lw.program.tensor(va), lw.program.tensor(vb)
    s_out, zp_out = lw.qparams(qnode)
    (m1, s1), (m2, s2), (mo, so) = add_params(ta.scale, tb.scale, s_out)
    if node.target is aten.sub.Tensor:
        m2 = -m2  # x - y: y's rescaling negated (same arithmetic on both kernels and the reference)
    shape = shape_of(node)
    out = lw.int8_tensor(shape, s_out, zp_out, out_order(lw, shape, va, vb), qnode.name)
    lo, hi = lw.act_range(act, s_out, zp_out)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    lw.emit("cortex_m::quantized_add.out",
             [va, i(ta.zero_point), i(m1), i(s1), vb, i(tb.zero_point), i(m2), i(s2), i(zp_out), i(mo), i(so),
                i(lo), i(hi)], out, node)
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.mul.Tensor, when=two_tensors)
def mul(lw, node, qnode, act):
    """Two int8 activations (broadcasting): cortex_m::quantized_mul."""
    va, vb = lw.quant_of(node.args[0]), lw.quant_of(node.args[1])
    if va is None or vb is None:
        return "an input is not int8"
    if act is not None:
        return "mul with a fused activation"
    va, vb = lw.to_nhwc(va, node), lw.to_nhwc(vb, node)
    ta, tb = lw.program.tensor(va), lw.program.tensor(vb)
    s_out, zp_out = lw.qparams(qnode)
    m, sh = quantize_multiplier(ta.scale * tb.scale / s_out)
    shape = shape_of(node)
    out = lw.int8_tensor(shape, s_out, zp_out, out_order(lw, shape, va, vb), qnode.name)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    lw.emit("cortex_m::quantized_mul.out", [va, i(ta.zero_point), vb, i(tb.zero_point), i(zp_out), i(m), i(sh)],
             out, node)
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.prelu.default)
def prelu(lw, node, qnode, act):
    """PReLU with constant slopes (one per channel, or one): where(x > 0, x, slope * x) on int8.
    x > 0 is an exact threshold on the codes, x is requantized to the output by a table (exact),
    slope * x is cortex_m::quantized_mul by the slopes quantized per tensor (int8, symmetric)."""
    from mcu_gen.quantize.int8_ops.compare import dequantized_codes, code_test

    v, wn = lw.quant_of(node.args[0]), node.args[1]
    if v is None:
        return "input is not int8"
    if not (isinstance(wn, torch.fx.Node) and wn.op == "get_attr"):
        return "the slopes are not a constant"
    if act is not None:
        return "prelu with a fused activation"
    w = get_attr_value(lw.gm, wn).double().numpy().reshape(-1)
    v = lw.to_nchw(v, node)
    t = lw.program.tensor(v)
    nd = len(t.shape)
    wshape = [1] * nd
    if w.size > 1:
        if nd < 2 or t.shape[1] != w.size:
            return f"{w.size} slopes for a {list(t.shape)} input"
        wshape[1] = w.size
    s_out, zp_out = lw.qparams(qnode)
    big = float(np.max(np.abs(w)))
    s_w = big / 127.0 if big > 0 else 1.0
    wq = np.clip(np.round(w / s_w), -127, 127).astype(np.int8).reshape(wshape)
    mult, shift = quantize_multiplier(t.scale * s_w / s_out)
    order = tuple(range(nd)) if nd == 4 else None
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    positive = code_test((dequantized_codes(t.scale, t.zero_point) > 0).numpy())
    mask = lw.program.add(TensorValue(t.shape, "bool", name=node.name + "_positive"))
    lw.emit(f"aten::{positive[0]}.Scalar_out", [v, i(positive[1])], mask, node)
    neg = lw.int8_tensor(t.shape, s_out, zp_out, order, node.name + "_negative")
    lw.emit("cortex_m::quantized_mul.out", [v, i(t.zero_point), lw.constant(wq, "int8", f"{node.name}_slopes"), i(0),
                                            i(zp_out), i(mult), i(shift)], neg, node)
    pos = lw.requantize(v, s_out, zp_out, node)
    out = lw.int8_tensor(t.shape, s_out, zp_out, order, qnode.name)
    lw.emit("aten::where.self_out", [mask, pos, neg], out, node)
    lw.finish(node, qnode, act, out)
    return None


@handler(when=is_lut_node)
def lut(lw, node, qnode, act):
    """An elementwise function of one int8 activation: a 256-entry table, cortex_m::quantized_activation."""
    v = lw.quant_of(node.args[0])
    if v is None:
        return "input is not int8"
    xt = lw.program.tensor(v)
    s_out, zp_out = lw.qparams(qnode)
    lo, hi = lw.act_range(act, s_out, zp_out)
    lut = activation_lut(node.target, node.args[1:], dict(node.kwargs), xt.scale, xt.zero_point, s_out, zp_out,
                         lo, hi)
    out = lw.int8_tensor(xt.shape, s_out, zp_out, xt.dim_order, qnode.name)
    lw.emit("cortex_m::quantized_activation.out", [v, lw.constant(lut, "int8", f"{node.name}_lut")], out, node)
    lw.finish(node, qnode, act, out)
    return None
