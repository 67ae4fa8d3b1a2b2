"""int8 lowering handlers: layout and data movement: permute/transpose, concatenation, slicing, nearest and
bilinear upsampling.

Each handler gets the lowering (mcu_gen/quantize/lowering.py's QuantLowering, `lw`), the fx node,
its quantize node and the activation fused into it (or None); it returns None when it lowered
the pattern, else the reason it cannot (the node then runs as an fp32 island)."""
from __future__ import annotations

import operator

import numpy as np
import torch

from mcu_gen.program.ir import TensorValue
from mcu_gen.quantize.int8_common import NHWC, PERMUTE_OPS, aten, quantize_multiplier, shape_of
from mcu_gen.quantize.int8_ops.registry import handler
from mcu_gen.quantize.layouts import order_without


def same_qparams_input(lw, node, qnode, act, what: str):
    """(value, tensor) of the int8 input of an operator that keeps its input's quantization
    parameters (a data movement), or why it cannot run in int8."""
    v = lw.quant_of(node.args[0])
    if v is None:
        return "input is not int8"
    t = lw.program.tensor(v)
    if lw.qparams(qnode) != (t.scale, t.zero_point) or act is not None:
        return f"{what} that changes quantization parameters"
    return v, t


@handler(*PERMUTE_OPS)
def permute(lw, node, qnode, act):
    """transpose / permute of an int8 activation: free, a view with another dim_order."""
    r = same_qparams_input(lw, node, qnode, act, "a permute")
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
    # an order that only moves dims of size 1 is row-major memory: no order (MultiheadAttention's [L, 1, E] ->
    # [1, L, E], whose residual add then sees operands of one order)
    moved = [d for d in new_order if shape[d] != 1]
    out = lw.alias(v, shape, None if moved == sorted(moved) else new_order, qnode.name)
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.cat.default)
def cat(lw, node, qnode, act):
    """int8 cat: inputs with the output's quantization (others requantized by a table), in
    one memory order; aten::cat.out on the memory-order views."""
    tensors = node.args[0]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    vs = [lw.quant_of(x) for x in tensors]
    if any(v is None for v in vs):
        return "an input is not int8"
    if act is not None:
        return "cat with a fused activation"
    s_out, zp_out = lw.qparams(qnode)
    vs = [lw.requantize(v, s_out, zp_out, node) for v in vs]
    ts = [lw.program.tensor(v) for v in vs]
    nd = len(ts[0].shape)
    dim = dim % nd
    if nd == 4:
        vs = [lw.to_nhwc(v, node) for v in vs]
        order = NHWC
    else:
        vs = [lw.contig(v, node) for v in vs]
        order = tuple(range(nd))
    mem = []
    for v in vs:
        t = lw.program.tensor(v)
        mem.append(lw.alias(v, tuple(t.shape[d] for d in order), None, t.name + "_mem"))
    mdim = order.index(dim)
    shape = shape_of(node)
    mem_shape = tuple(shape[d] for d in order)
    out_mem = lw.int8_tensor(mem_shape, s_out, zp_out, tuple(range(nd)), qnode.name + "_mem")
    lw.emit("aten::cat.out", [lw.scalar("tensor_list", mem), lw.scalar("int", mdim)], out_mem, node)
    out = lw.alias(out_mem, shape, NHWC if nd == 4 else None, qnode.name)
    lw.finish(node, qnode, act, out)
    return None


@handler(aten.slice.Tensor)
def slice_tensor(lw, node, qnode, act):
    """A slice (e.g. the older frames of a ring buffer): a byte copy, aten::slice_copy on int8 in
    the input's memory order (lw.memory_view)."""
    r = same_qparams_input(lw, node, qnode, act, "slice")
    if isinstance(r, str):
        return r
    v, t = r
    args = list(node.args) + [0, None, None, 1][len(node.args) - 1:]
    dim, start, end, step = args[1:5]
    mem, order = lw.memory_view(v)  # in memory order: a channels-last input stays channels-last
    out_mem, out = lw.memory_result(shape_of(node), order, t.scale, t.zero_point, qnode.name)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    lw.emit("aten::slice_copy.Tensor_out",
             [mem, i(order.index(dim % len(order))), i(0 if start is None else start),
              i(2**63 - 1 if end is None else end), i(step)], out_mem, node)
    lw.finish(node, qnode, act, out)
    return None


def _parts(node, size: int) -> list:
    """[(start, length)] of the parts chunk / split / split_with_sizes / unbind cut a dim of `size` into
    (unbind: parts of length 0, a select)."""
    t, arg = node.target, node.args[1] if len(node.args) > 1 else None
    if t is aten.unbind.int:
        return [(i, 0) for i in range(size)]
    if t is aten.chunk.default:
        step = -(-size // arg)  # torch.chunk: parts of ceil(size / chunks), the last one shorter
        lengths = [min(step, size - s) for s in range(0, size, step)]
    elif t is aten.split.Tensor:
        lengths = [min(arg, size - s) for s in range(0, size, arg)] if arg else [0]
    else:
        lengths = list(arg)
    starts = np.cumsum([0] + lengths[:-1]).tolist()
    return list(zip(starts, lengths))


@handler(aten.chunk.default, aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int, plain=True)
def split(lw, node, qnode, act):
    """chunk / split / split_with_sizes / unbind: each part read (a getitem whose result is quantized with the
    input's parameters, the quantizer's shared spec) is a byte copy of its slice (aten::slice_copy, unbind's
    aten::select_copy) on the input's memory-order view (lw.memory_view): a channels-last input cut along its
    channels stays channels-last."""
    v = lw.quant_of(node.args[0])
    if v is None:
        return "input is not int8"
    t = lw.program.tensor(v)
    k = 1 if node.target is aten.unbind.int else 2  # unbind(x, dim), the others (x, parts, dim)
    dim = (node.args[k] if len(node.args) > k else node.kwargs.get("dim", 0)) % len(t.shape)
    parts = _parts(node, t.shape[dim])
    picked = []
    for u in node.users:
        if u.op != "call_function" or u.target is not operator.getitem:
            return f"a part used other than by indexing ({u.name})"
        if not u.users:
            continue
        oq = lw.output_quant(u)
        if oq is None or oq[1] is not None or lw.qparams(oq[0]) != (t.scale, t.zero_point):
            return "a part that is not quantized with the input's parameters"
        picked.append((u, oq[0], parts[u.args[1]]))
    mem, order = lw.memory_view(v)
    mdim = order.index(dim)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    for u, uq, (start, length) in picked:
        out_mem, out = lw.memory_result(shape_of(u), order if length else order_without(order, [dim]), t.scale,
                                        t.zero_point, uq.name)
        if length:
            lw.emit("aten::slice_copy.Tensor_out", [mem, i(mdim), i(start), i(start + length), i(1)], out_mem, node)
        else:
            lw.emit("aten::select_copy.int_out", [mem, i(mdim), i(start)], out_mem, node)
        lw.finish(u, uq, None, out)
    lw.done.add(node)
    lw.done.update(u for u in node.users if not u.users)
    return None


@handler(aten.upsample_nearest2d.vec, aten.upsample_nearest2d.default)
def upsample_nearest(lw, node, qnode, act):
    """Nearest upsampling: a byte copy (aten::upsample_nearest2d.vec_out on int8, NCHW order)."""
    r = same_qparams_input(lw, node, qnode, act, "upsampling")
    if isinstance(r, str):
        return r
    v, t = r
    s_out, zp_out = t.scale, t.zero_point
    v = lw.to_nchw(v, node)
    shape = shape_of(node)
    out = lw.int8_tensor(shape, s_out, zp_out, (0, 1, 2, 3), qnode.name)
    lw.emit("aten::upsample_nearest2d.vec_out",
             [v, lw.scalar("int_list", list(shape[2:])), lw.scalar("none")], out, node)
    lw.finish(node, qnode, act, out)
    return None


def _bilinear_weights(node, h: int, w: int):
    """The [out, in] interpolation matrices along H and along W of node's upsample_bilinear2d
    (the node's own sizes, align_corners and scale factors), from PyTorch on one-hot inputs."""
    def along(n_in, axis):
        shape = [n_in, 1, h, w]
        eye = torch.eye(n_in).reshape([n_in, 1] + ([n_in, 1] if axis == 2 else [1, n_in])).expand(shape)
        out = aten.upsample_bilinear2d.vec(eye.contiguous(), *node.args[1:])
        line = out[:, 0, :, 0] if axis == 2 else out[:, 0, 0, :]
        return line.T.double().numpy()  # [out, in]

    return along(h, 2), along(w, 3)


@handler(aten.upsample_bilinear2d.vec)
def upsample_bilinear(lw, node, qnode, act):
    """Bilinear upsampling, separable: a fully connected layer along W, then one along H (the
    interpolation weights as int8, 127 for 1.0), cortex_m::quantized_linear with the input's
    parameters in and out (the quantizer shares them); transposes put each axis last."""
    r = same_qparams_input(lw, node, qnode, act, "upsampling")
    if isinstance(r, str):
        return r
    v, t = r
    if len(t.shape) != 4:
        return "bilinear upsampling of a tensor that is not 4-D"
    n, c, h, w = t.shape
    oh, ow = shape_of(node)[2:]
    wh, ww = _bilinear_weights(node, h, w)
    scale_w = 1.0 / 127.0
    if max(np.abs(wh).max(), np.abs(ww).max()) > 1.0 + 1e-6:
        return "interpolation weights above 1"
    mult, shift = quantize_multiplier(scale_w)
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731

    def linear(x, rows, k, weights, name):
        """x viewed as [rows, k] times weights^T ([m, k] int8): [rows, m] with x's parameters."""
        wq = np.clip(np.round(weights / scale_w), -127, 127).astype(np.int8)
        m = wq.shape[0]
        ksum = wq.astype(np.int64).sum(axis=1) * -t.zero_point
        out = lw.int8_tensor((rows, m), t.scale, t.zero_point, None, name)
        lw.emit("cortex_m::quantized_linear.out",
                [lw.alias(x, (rows, k), None, name + "_in"), lw.constant(wq, "int8", name + "_weights"),
                 lw.scalar("none"), lw.constant(ksum, "int32", name + "_kernel_sum"), i(-t.zero_point), i(0),
                 i(t.zero_point), lw.scalar("int_list", [mult]), lw.scalar("int_list", [shift]), i(127), i(-128)],
                out, node)
        return out

    def transpose(x, shape, perm, name):
        out = lw.program.add(TensorValue(tuple(shape[p] for p in perm), "int8", name=name, scale=t.scale,
                                         zero_point=t.zero_point))
        lw.emit("cortex_m::transpose.out", [lw.alias(x, tuple(shape), None, name + "_in"),
                                            lw.scalar("int_list", list(perm))], out, node)
        return out

    x = lw.to_nchw(v, node)  # [n, c, h, w] row-major
    x = linear(x, n * c * h, w, ww, qnode.name + "_w")  # [n, c, h, ow]
    x = transpose(x, (n, c, h, ow), (0, 1, 3, 2), qnode.name + "_hlast")  # [n, c, ow, h]
    x = linear(x, n * c * ow, h, wh, qnode.name + "_h")  # [n, c, ow, oh]
    x = transpose(x, (n, c, ow, oh), (0, 1, 3, 2), qnode.name + "_nchw")  # [n, c, oh, ow]
    out = lw.alias(x, (n, c, oh, ow), (0, 1, 2, 3), qnode.name)
    lw.finish(node, qnode, act, out)
    return None
