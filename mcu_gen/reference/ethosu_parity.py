"""Host parity of a lowered subgraph: tosa-tools' TOSA reference model against mcu-gen's
integer reference (mcu_gen.quantize.reference) on the same int8 inputs.

Tolerances (in int8 steps of the output), and why:
- conv2d, depthwise_conv2d, linear, max_pool2d: 0. TOSA RESCALE with DOUBLE_ROUND and
  shift 31 - s is arm_nn_requantize exactly (same nudges; see docs/ethos_u.md).
- avg_pool2d: 1. TOSA AVG_POOL2D divides the integer sum by a fixed-point reciprocal of the
  count; the cortex_m reference averages in float32 and rounds half to even.
A subgraph's tolerance is the largest of its operators', carried through the layers after it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from mcu_gen.program.ir import Program
from mcu_gen.backends.ethosu.partition import Subgraph
from mcu_gen.backends.ethosu.tosa_lowering import TosaGraph
from mcu_gen.errors import McuGenError

OP_TOLERANCE = {
    "cortex_m::quantized_conv2d.out": 0,
    "cortex_m::quantized_depthwise_conv2d.out": 0,
    "cortex_m::quantized_linear.out": 0,
    "cortex_m::quantized_max_pool2d.out": 0,
    "cortex_m::quantized_avg_pool2d.out": 1,
}


class ParityError(McuGenError, AssertionError):
    pass


@dataclass
class ParityResult:
    max_abs_diff: int
    tolerance: int
    mismatches: int
    elements: int

    @property
    def ok(self) -> bool:
        return self.max_abs_diff <= self.tolerance


def tolerance(program: Program, sg: Subgraph) -> int:
    return max(OP_TOLERANCE[program.instructions[i].op] for i in sg.instructions)


def run_tosa(graph: TosaGraph, inputs: list) -> list:
    """Run the TOSA flatbuffer on the reference model; inputs in the graph's stored (NHWC) shapes."""
    import tosa_reference_model as trm

    outs, status = trm.run(graph.flatbuffer, [np.ascontiguousarray(x, np.int8) for x in inputs])
    if status != trm.GraphStatus.TOSA_VALID:
        raise ParityError(f"TOSA reference model: graph status {status}")
    return [np.asarray(o).reshape(s) for o, s in zip(outs, graph.output_shapes)]


def subgraph_program(program: Program, sg: Subgraph) -> Program:
    """The subgraph as a program of its own (same values, its instructions only)."""
    p = copy.deepcopy(program)
    p.instructions = [p.instructions[i] for i in sg.instructions]
    p.inputs, p.outputs = list(sg.inputs), list(sg.outputs)
    for v in p.values:
        if hasattr(v, "offset") and not v.is_constant:
            v.offset = None
    return p


def _logical(t, stored: np.ndarray) -> np.ndarray:
    order = list(t.dim_order)
    return np.ascontiguousarray(stored.transpose(np.argsort(order)))


def run_reference(program: Program, sg: Subgraph, stored_inputs: list) -> list:
    """mcu-gen's integer reference on the subgraph; inputs and outputs in stored layout."""
    from mcu_gen.reference.integer import run_int8_reference

    p = subgraph_program(program, sg)
    logical = [_logical(p.tensor(v), x) for v, x in zip(sg.inputs, stored_inputs)]
    outs = run_int8_reference(p, logical)
    return [np.ascontiguousarray(o.transpose(p.tensor(v).dim_order)) for o, v in zip(outs, sg.outputs)]


def check(program: Program, sg: Subgraph, graph: TosaGraph, seed: int = 0, trials: int = 4) -> ParityResult:
    rng = np.random.default_rng(seed)
    worst, bad, total = 0, 0, 0
    for k in range(trials):
        xs = [rng.integers(-128, 128, size=s, dtype=np.int8) for s in graph.input_shapes]
        if k == 0:  # extremes too
            xs = [np.where(rng.random(s) < 0.5, -128, 127).astype(np.int8) for s in graph.input_shapes]
        got = run_tosa(graph, xs)
        want = run_reference(program, sg, xs)
        for g, w in zip(got, want):
            d = np.abs(g.astype(np.int32) - w.astype(np.int32))
            worst = max(worst, int(d.max()))
            bad += int((d > 0).sum())
            total += d.size
    return ParityResult(worst, tolerance(program, sg), bad, total)
