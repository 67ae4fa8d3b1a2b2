"""int8 lowering handlers: comparisons and where, on int8 codes, computing exactly what the converted
graph (dequantize, compare in float32, ...) computes:
- a comparison with a number: the float32 comparison is evaluated here for all 256 codes (as
  PyTorch does it: dequantized value against the number in float32); dequantization is monotonic,
  so the codes for which it holds are a run of codes, compared with an integer threshold on the
  device (x >= t, x <= t, x == t, x != t, or always true / false);
- a comparison of two int8 tensors: the quantizer gives both the same parameters (the second
  operand is requantized to the first's on its edge, by a table); with equal parameters and a
  strictly increasing dequantization, comparing codes is comparing the dequantized values;
- where(cond, a, b): a and b requantized to the output's parameters (tables, the numbers of
  dequantize then quantize), then aten::where.self_out on int8 bytes.
Results of comparisons are bool tensors (not quantized), in logical (row-major) order."""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.program.ir import TensorValue
from mcu_gen.quantize.arith import dequantize_f32
from mcu_gen.quantize.int8_common import INT8_MAX, INT8_MIN, aten, shape_of
from mcu_gen.quantize.int8_ops.registry import handler

_NAMES = ("eq", "ne", "lt", "le", "gt", "ge")
SCALAR_COMPARISONS = {getattr(aten, n).Scalar: n for n in _NAMES}
TENSOR_COMPARISONS = {getattr(aten, n).Tensor: n for n in _NAMES}


def dequantized_codes(scale: float, zp: int) -> torch.Tensor:
    """The dequantized value of every int8 code, in float32 as quantized_decomposed computes it."""
    return torch.from_numpy(dequantize_f32(np.arange(INT8_MIN, INT8_MAX + 1), scale, zp))


def code_test(truth: np.ndarray):
    """(op, integer threshold) with op(code, threshold) == truth[code + 128] for every int8 code, or
    None when the codes that pass are not a run that one comparison selects."""
    idx = np.flatnonzero(truth)
    if idx.size == 0:
        return "gt", INT8_MAX  # never
    if idx.size == truth.size:
        return "ge", INT8_MIN  # always
    first, last = int(idx[0]) + INT8_MIN, int(idx[-1]) + INT8_MIN
    if idx.size == last - first + 1:  # one run
        if last == INT8_MAX:
            return "ge", first
        if first == INT8_MIN:
            return "le", last
        if first == last:
            return "eq", first
        return None
    off = np.flatnonzero(~truth)
    if off.size == 1:
        return "ne", int(off[0]) + INT8_MIN
    return None


def _bool_out(lw, node) -> int:
    return lw.program.add(TensorValue(shape_of(node), "bool", name=node.name))


@handler(*SCALAR_COMPARISONS, plain=True)
def compare_scalar(lw, node, qnode, act):
    """x <op> number on int8 codes: the number as an exact integer threshold on the codes."""
    v = lw.quant_of(node.args[0])
    c = node.args[1] if len(node.args) > 1 else node.kwargs.get("other")
    if v is None:
        return "input is not int8"
    if not isinstance(c, (int, float, bool)):
        return "the other operand is not a number"
    t = lw.program.tensor(v)
    truth = node.target(dequantized_codes(t.scale, t.zero_point), c).numpy()
    test = code_test(truth)
    if test is None:
        return "the codes that pass are not one run"
    op, threshold = test
    out = _bool_out(lw, node)
    lw.emit(f"aten::{op}.Scalar_out", [lw.to_nchw(v, node), lw.scalar("int", threshold)], out, node)
    lw.finish_plain(node, out)
    return None


@handler(*TENSOR_COMPARISONS, plain=True)
def compare_tensors(lw, node, qnode, act):
    """a <op> b of two int8 tensors with the same parameters: the codes compared."""
    va, vb = lw.quant_of(node.args[0]), lw.quant_of(node.args[1])
    if va is None or vb is None:
        return "an operand is not int8"
    ta, tb = lw.program.tensor(va), lw.program.tensor(vb)
    if (ta.scale, ta.zero_point) != (tb.scale, tb.zero_point):
        return "operands with different quantization parameters"
    f = dequantized_codes(ta.scale, ta.zero_point)
    if not bool(torch.all(f[1:] > f[:-1])):
        return "two codes dequantize to the same value (scale too small)"
    out = _bool_out(lw, node)
    name = TENSOR_COMPARISONS[node.target]
    lw.emit(f"aten::{name}.Tensor_out", [lw.to_nchw(va, node), lw.to_nchw(vb, node)], out, node)
    lw.finish_plain(node, out)
    return None


@handler(aten.where.self)
def where(lw, node, qnode, act):
    """where(cond, a, b) with int8 a and b: both requantized to the output's parameters, then picked."""
    cond = lw.plain_of(node.args[0])
    va, vb = lw.quant_of(node.args[1]), lw.quant_of(node.args[2])
    if cond is None or lw.program.tensor(cond).dtype != "bool":
        return "the condition is not a bool tensor"
    if va is None or vb is None:
        return "an operand is not int8"
    if act is not None:
        return "where with a fused activation"
    s_out, zp_out = lw.qparams(qnode)
    va, vb = (lw.to_nchw(lw.requantize(x, s_out, zp_out, node), node) for x in (va, vb))
    shape = shape_of(node)
    out = lw.int8_tensor(shape, s_out, zp_out, tuple(range(4)) if len(shape) == 4 else None, qnode.name)
    lw.emit("aten::where.self_out", [lw.contig(cond, node), va, vb], out, node)
    lw.finish(node, qnode, act, out)
    return None
