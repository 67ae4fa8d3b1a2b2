"""How far int8 is from fp32: per operator of the int8 graph (at build time) and per output (at
run time). Exactness (device == host integer reference) is checked elsewhere; this is accuracy.

    rows = operator_errors(program, spec)   # report.json "int8_operator_error", report.md
    rows = output_errors(program, dequantized_outputs, fp32_outputs)

Per operator: the integer reference runs the program on the first calibration input (the
model file's example input otherwise) and every int8 result the lowering recorded
(``program.meta["int8_results"]``: fx node name -> value) is dequantized and compared with
the same node of the fp32 graph (the captured model before quantization, run in PyTorch).
"""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.program.pte import DELEGATE_PREFIX


def _fp32_node_values(spec, inputs) -> dict:
    """{fx node name: fp32 tensor} of the captured (not quantized) model."""
    from mcu_gen.quantize.capture import capture_for_quantization

    gm = capture_for_quantization(spec.module, spec.example_inputs)
    values = {}

    class Rec(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            if isinstance(r, torch.Tensor):
                values[n.name] = r.detach()
            return r

    with torch.no_grad():
        Rec(gm).run(*inputs)
    return values


def operator_errors(program, spec) -> list:
    """[{node, op, source, max_abs_error, rel_error}] for every int8 result with an fp32 twin; when
    the figures cannot be had, one row {"unavailable": why} instead (report.md prints it): the table is
    never emptied silently."""
    from mcu_gen.reference.integer import execute_instruction, planned
    from mcu_gen.reference.interpreter import interpret

    results = program.meta.get("int8_results") or {}
    if spec is None or spec.module is None or not results or program.meta.get("prequantized"):
        return []  # (a model quantized already, e.g. by QAT, has no fp32 twin here)
    if any(ins.op.startswith(DELEGATE_PREFIX) for ins in program.instructions):
        return [{"unavailable": "the host cannot run the NPU's part of the program, so there are no int8 "
                                "results per operator to compare"}]
    inputs = (spec.calibration_inputs or [spec.example_inputs])[0]
    try:
        fp = _fp32_node_values(spec, inputs)
    except Exception as e:  # a model that cannot be captured again: no per-operator figures, and why
        return [{"unavailable": f"the fp32 model could not be captured and run again to compare with "
                                f"({type(e).__name__}: {e})"}]
    p = planned(program)
    if p.meta.get("io") == "int8":
        from mcu_gen.reference.integer import quantize_f32

        ins = [quantize_f32(x.numpy(), p.tensor(i).scale, p.tensor(i).zero_point) for x, i in zip(inputs, p.inputs)]
    else:
        ins = [x.numpy() for x in inputs]
    _, trace = interpret(p, ins, execute_instruction, trace=True)
    written = {}
    for step in trace:
        written.update(step)
    aliases = p.meta.get("aliases", {})
    rows = []
    for name, (v, op, source) in results.items():
        root = v
        while root not in written and root in aliases:
            root = aliases[root]
        if name not in fp or root not in written:
            continue
        t = p.tensor(v)
        q = written[root]
        ref = fp[name].numpy()
        if q.size != ref.size:
            continue
        rt = p.tensor(root)
        if rt.shape != t.shape:  # an alias of another shape: the value's logical view of the same bytes
            mem = q.transpose(rt.dim_order) if rt.dim_order else q
            order = t.dim_order or tuple(range(len(t.shape)))
            q = np.asarray(mem, order="C").reshape([t.shape[d] for d in order]).transpose(np.argsort(order))
        deq = (q.astype(np.float32) - t.zero_point) * np.float32(t.scale)
        err = float(np.max(np.abs(deq - ref.reshape(deq.shape)))) if deq.size else 0.0
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        rows.append({"node": name, "op": op, "source": source, "max_abs_error": err,
                     "rel_error": err / scale if scale > 0 else 0.0, "scale": t.scale})
    return rows


def output_errors(program, dequantized: list, fp32: list, inputs_shapes) -> list:
    """Per output: max abs and RMS error against fp32, and for (N, K) outputs (K >= 2, not an
    input's shape) whether the top-1 class agrees."""
    rows = []
    for g, w in zip(dequantized, fp32):
        g = np.asarray(g, np.float64)
        w = np.asarray(w, np.float64).reshape(g.shape)
        d = g - w
        row = {"max_abs_error": float(np.max(np.abs(d))) if d.size else 0.0,
               "rms_error": float(np.sqrt(np.mean(d * d))) if d.size else 0.0, "top1_agreement": None}
        if g.ndim == 2 and g.shape[1] >= 2 and tuple(g.shape) not in inputs_shapes:
            row["top1_agreement"] = float(np.mean(np.argmax(g, axis=-1) == np.argmax(w, axis=-1)))
        rows.append(row)
    return rows
