"""int8 lowering handlers: ops that look values up or rank them, run by the portable kernel of the op
itself on int8 bytes (the kernels are dtype-generic):
- embedding: the table is quantized per tensor (quantizer.table_spec) and stored int8; the rows it
  returns share its parameters, the int64 / int32 ids are the model's own;
- argmax / argmin, max / min over a dim and topk: int8 codes are in the order of the real values
  (scale > 0), so the kernels rank the bytes directly: values keep the input's parameters (the
  quantizer shares them), indices are int64.

Inputs are brought to logical (row-major) order first; results are row-major."""
from __future__ import annotations

import operator

import numpy as np

from mcu_gen.capture.export import source_line
from mcu_gen.program.ir import Instruction, TensorValue
from mcu_gen.quantize.int8_common import aten, shape_of
from mcu_gen.quantize.int8_ops.registry import handler


@handler(aten.embedding.default)
def embedding(lw, node, qnode, act):
    """table[ids]: aten::embedding.out on the int8 table, rows with the table's parameters."""
    wq = lw.weight(node.args[0])
    if wq is None:
        return "the table is not a constant quantized per tensor"
    w, scales, zps = wq
    if w.ndim != 2 or not (np.all(scales == scales[0]) and np.all(zps == zps[0])):
        return "the table is not a 2-D tensor quantized per tensor"
    ids = lw.plain_of(node.args[1])
    if ids is None or lw.program.tensor(ids).dtype not in ("int64", "int32"):
        return "the ids are not an int64 / int32 tensor"
    if act is not None:
        return "embedding with a fused activation"
    ids = lw.contig(ids, node)
    scale, zp = float(scales[0]), int(zps[0])
    rows = lw.int8_tensor(shape_of(node), scale, zp, tuple(range(len(shape_of(node)))) if len(shape_of(node)) == 4
                          else None, qnode.name + "_rows")
    args = list(node.args) + [-1, False, False][len(node.args) - 2:]
    lw.emit("aten::embedding.out", [lw.constant(w, "int8", f"{node.name}_table"), ids,
                                    lw.scalar("int", int(args[2])), lw.scalar("bool", bool(args[3])),
                                    lw.scalar("bool", bool(args[4]))], rows, node)
    lw.finish(node, qnode, act, lw.requantize(rows, *lw.qparams(qnode), node))
    return None


def _int8_logical(lw, node):
    """The int8 input of a ranking op in logical (row-major) order, or None."""
    v = lw.quant_of(node.args[0])
    return None if v is None else lw.to_nchw(v, node)


def _arg(node, k: int, name: str, default):
    return node.args[k] if len(node.args) > k else node.kwargs.get(name, default)


@handler(aten.argmax.default, aten.argmin.default, plain=True)
def arg_extreme(lw, node, qnode, act):
    """argmax / argmin of int8 codes: the real order (scale > 0), ties alike (first index): the
    int64 index straight from the bytes, nothing dequantized."""
    v = _int8_logical(lw, node)
    if v is None:
        return "input is not int8"
    dim, keepdim = _arg(node, 1, "dim", None), _arg(node, 2, "keepdim", False)
    out = lw.program.add(TensorValue(shape_of(node), "int64", name=node.name))
    op = "aten::argmax.out" if node.target is aten.argmax.default else "aten::argmin.out"
    lw.emit(op, [v, lw.scalar("none") if dim is None else lw.scalar("int", int(dim)),
                 lw.scalar("bool", bool(keepdim))], out, node)
    lw.finish_plain(node, out)
    return None


# topk's kernel orders equal values as PyTorch does for slices up to this length (op_topk.cpp's
# kOrderedMax); int8 codes have many ties, so longer slices stay fp32.
TOPK_ORDERED_MAX = 128


@handler(aten.max.dim, aten.min.dim, aten.topk.default, plain=True)
def ranked(lw, node, qnode, act):
    """max / min over a dim and topk on int8 codes (order-preserving): the values are input bytes
    (the input's parameters, which the quantizer shares with them), the indices int64."""
    v = _int8_logical(lw, node)
    if v is None:
        return "input is not int8"
    getters = {}
    for u in node.users:
        if u.op != "call_function" or u.target is not operator.getitem:
            return f"a result used other than by indexing ({u.name})"
        getters[u.args[1]] = u
    quant = None
    if 0 in getters and getters[0].users:
        quant = lw.output_quant(getters[0])
        if quant is None or quant[1] is not None:
            return "its values are not quantized (the quantizer left them in fp32)"
    t = lw.program.tensor(v)
    val = node.meta["val"]
    vshape, ishape = tuple(int(s) for s in val[0].shape), tuple(int(s) for s in val[1].shape)
    order = tuple(range(len(vshape))) if len(vshape) == 4 else None
    values = lw.int8_tensor(vshape, t.scale, t.zero_point, order, node.name + "_values")
    indices = lw.program.add(TensorValue(ishape, "int64", name=node.name + "_indices"))
    i = lambda x: lw.scalar("int", int(x))  # noqa: E731
    b = lambda x: lw.scalar("bool", bool(x))  # noqa: E731
    if node.target is aten.topk.default:
        k, dim = int(node.args[1]), int(_arg(node, 2, "dim", -1))
        if len(t.shape) and t.shape[dim] > TOPK_ORDERED_MAX:
            return f"topk over {t.shape[dim]} > {TOPK_ORDERED_MAX} int8 values (the order of ties)"
        args = [v, i(k), i(dim), b(_arg(node, 3, "largest", True)), b(_arg(node, 4, "sorted", True))]
        op = "aten::topk.values"
    else:
        args = [v, i(node.args[1]), b(_arg(node, 2, "keepdim", False))]
        op = "aten::max.dim_max" if node.target is aten.max.dim else "aten::min.dim_min"
    outs = [values, indices, lw.scalar("tensor_list", [values, indices])]
    lw.program.instructions.append(Instruction(op, args + outs, source_line(node, lw.user_file)))
    lw.done.add(node)
    if quant is not None:
        lw.finish(getters[0], quant[0], None, lw.requantize(values, *lw.qparams(quant[0]), node))
    elif 0 in getters:
        lw.done.add(getters[0])
    if 1 in getters:
        lw.finish_plain(getters[1], indices)
    return None
