"""int8 lowering handlers: ops that only move, repeat or pick bytes, run by the portable kernel of
the op itself on int8 values (the kernels take int8):
- expand, repeat and padding (the zero point is the quantized 0 of a constant pad) keep their
  input's quantization parameters (the quantizer shares them: quantizer.SHARED_OPS);
- select and amax/amin (order-preserving: the largest int8 value is the largest real value,
  scale > 0) pick codes of their input and keep its parameters too (quantizer.SHARED_OPS: another
  scale could only round the picked codes again); a graph quantized elsewhere with other output
  parameters gets its bytes requantized by a 256-entry table, the numbers an fp32 island
  (dequantize, pick, quantize) gives, without its fp32 buffer.

A constant pad, select and amax/amin run on their input's bytes in memory order (lw.memory_view: a
channels-last input is not transposed, its dims are mapped) and their result keeps that order. expand,
repeat and reflect/replicate padding bring their input to logical (NCHW / row-major) order first; a 4-D
result is stored NCHW and the next int8 kernel that wants channels-last transposes it (lw.to_nhwc)."""
from __future__ import annotations

from mcu_gen.quantize.int8_common import aten, pad_mode_and_value, shape_of
from mcu_gen.quantize.int8_ops.registry import handler
from mcu_gen.quantize.int8_ops.shape import same_qparams_input
from mcu_gen.quantize.layouts import order_without


def _logical_input(lw, node, qnode, act, what: str):
    """(row-major int8 value, its tensor) of a byte-moving op's input, or why it cannot run in int8."""
    r = same_qparams_input(lw, node, qnode, act, what)
    if isinstance(r, str):
        return r
    v, t = r
    v = lw.to_nchw(v, node)
    return v, lw.program.tensor(v)


def _out(lw, node, qnode, t):
    shape = shape_of(node)
    order = tuple(range(len(shape))) if len(shape) == 4 else None
    return lw.int8_tensor(shape, t.scale, t.zero_point, order, qnode.name)


def _emit(lw, node, qnode, act, op: str, args: list, t) -> None:
    out = _out(lw, node, qnode, t)
    lw.emit(op, args, out, node)
    lw.finish(node, qnode, act, out)


def _picked(lw, node, qnode, act, op: str, args, dims, keepdim: bool):
    """Runs a picking op over logical `dims` of its int8 input on the input's memory view (lw.memory_view: no
    transpose; `args(mem_dims)` the op's arguments after the input), then requantizes to its own output
    parameters. The result keeps the input's order of the dims that remain."""
    v = lw.quant_of(node.args[0])
    if v is None:
        return "input is not int8"
    if act is not None:
        return "a fused activation"
    t = lw.program.tensor(v)
    nd = len(t.shape)
    mem, order = lw.memory_view(v)
    dims = sorted({d % nd for d in dims}) if dims else list(range(nd))  # (none: all of them)
    out_order = order if keepdim else order_without(order, dims)
    picked_mem, picked = lw.memory_result(shape_of(node), out_order, t.scale, t.zero_point, qnode.name + "_picked")
    lw.emit(op, [mem] + args([order.index(d) for d in dims]), picked_mem, node)
    out = lw.requantize(picked, *lw.qparams(qnode), node)
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.select.int)
def select(lw, node, qnode, act):
    """x[..., i, ...]: aten::select_copy on int8, requantized."""
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    return _picked(lw, node, qnode, act, "aten::select_copy.int_out",
                   lambda mem_dims: [i(mem_dims[0]), i(node.args[2])], [node.args[1]], False)


@handler(aten.expand.default)
def expand(lw, node, qnode, act):
    """Broadcast copies: aten::expand_copy on int8."""
    r = _logical_input(lw, node, qnode, act, "expand")
    if isinstance(r, str):
        return r
    v, t = r
    sizes = lw.scalar("int_list", [int(s) for s in node.args[1]])
    _emit(lw, node, qnode, act, "aten::expand_copy.out", [v, sizes, lw.scalar("bool", False)], t)
    return None


@handler(aten.repeat.default)
def repeat(lw, node, qnode, act):
    """Tiled copies: aten::repeat on int8."""
    r = _logical_input(lw, node, qnode, act, "repeat")
    if isinstance(r, str):
        return r
    v, t = r
    _emit(lw, node, qnode, act, "aten::repeat.out", [v, lw.scalar("int_list", [int(s) for s in node.args[1]])], t)
    return None


@handler(aten.pad.default, aten.constant_pad_nd.default)
def pad(lw, node, qnode, act):
    """Constant padding with 0 (the zero point: exact), reflect and replicate padding: the
    portable padding kernels on int8."""
    mode, value = pad_mode_and_value(node)
    if mode == "constant" and value != 0.0:
        return "a constant pad with a value other than 0"
    widths = [int(p) for p in node.args[1]]
    if mode == "constant":  # in the input's memory order: a channels-last input stays channels-last
        r = same_qparams_input(lw, node, qnode, act, "pad")
        if isinstance(r, str):
            return r
        v, t = r
        nd = len(t.shape)
        if len(widths) % 2 or len(widths) > 2 * nd:
            return f"{len(widths)} pad widths for a {nd}-D tensor"
        per_dim = [(0, 0)] * nd  # (before, after) of each logical dim; widths run from the last dim back
        for i in range(len(widths) // 2):
            per_dim[nd - 1 - i] = (widths[2 * i], widths[2 * i + 1])
        mem, order = lw.memory_view(v)
        mem_widths = [w for d in reversed(order) for w in per_dim[d]]
        while len(mem_widths) > 2 and mem_widths[-2:] == [0, 0]:
            mem_widths = mem_widths[:-2]
        out_mem, out = lw.memory_result(shape_of(node), order, t.scale, t.zero_point, qnode.name)
        lw.emit("aten::constant_pad_nd.out", [mem, lw.scalar("int_list", mem_widths),
                                              lw.scalar("int", int(t.zero_point))], out_mem, node)
        lw.finish(node, qnode, act, out)
        return None
    r = _logical_input(lw, node, qnode, act, "pad")
    if isinstance(r, str):
        return r
    v, t = r
    pads = lw.scalar("int_list", widths)
    kind = {"reflect": "reflection", "replicate": "replication"}.get(mode)
    nd = len(widths) // 2
    if kind is None or not 1 <= nd <= 3 or len(t.shape) not in (nd + 1, nd + 2):
        return f"{mode} padding of a {len(t.shape)}-D tensor over {nd} dims"
    _emit(lw, node, qnode, act, f"aten::{kind}_pad{nd}d.out", [v, pads], t)
    return None


@handler(aten.amax.default, aten.amin.default)
def extreme(lw, node, qnode, act):
    """amax/amin over dims: the int8 extreme is the real extreme (order-preserving), requantized."""
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", [])
    dims = [dims] if isinstance(dims, int) else list(dims)
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    op = "aten::amax.out" if node.target is aten.amax.default else "aten::amin.out"
    return _picked(lw, node, qnode, act, op, lambda mem_dims: [lw.scalar("int_list", sorted(mem_dims)),
                                                              lw.scalar("bool", bool(keepdim))], dims, keepdim)
