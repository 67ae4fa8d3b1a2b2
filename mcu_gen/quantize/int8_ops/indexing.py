"""int8 lowering handlers: ops that look values up or rank them, run by the portable kernel of the op
itself on int8 bytes (the kernels are dtype-generic):
- embedding: the table is quantized per tensor (quantizer.table_spec) and stored int8; the rows it
  returns share its parameters, the int64 / int32 ids are the model's own.

Inputs are brought to logical (row-major) order first; results are row-major."""
from __future__ import annotations

import numpy as np

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
