"""`mcu-gen debug`: every intermediate tensor from the device, compared with the host reference,
and the first operator that diverges, with its line in the user's model.

The device executes one instruction at a time (RUN_RANGE, docs/protocol.md); after each, the
host reads the values that instruction wrote (READ_VALUE) before a later instruction can reuse
their memory, and compares them with the host reference interpreter's values at the same step
(mcu_gen.reference.run_reference_trace; the int8 reference for quantized programs).

    r = debug("model.py", board="mps2-an505")
    print(format_report(r)); r.first_divergence  # StepCheck or None
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mcu_gen.program import pte
from mcu_gen.device.session import device_inputs, ensure_program, host_inputs, open_device, value_from_bytes

FLOAT_RTOL = 1e-4  # |device - reference| <= 1e-4 * max(1, max |reference|), as `mcu-gen run` checks outputs


@dataclass
class ValueCheck:
    value: int
    shape: list
    dtype: str
    max_abs_error: float
    tolerance: float
    ok: bool


@dataclass
class StepCheck:
    index: int
    op: str
    source: str
    values: list = field(default_factory=list)  # ValueCheck per value the instruction wrote

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.values)

    @property
    def max_abs_error(self) -> float:
        return max((v.max_abs_error for v in self.values), default=0.0)


@dataclass
class DebugResult:
    board: str
    model: str
    steps: list = field(default_factory=list)

    @property
    def first_divergence(self) -> StepCheck | None:
        return next((s for s in self.steps if not s.ok), None)

    @property
    def ok(self) -> bool:
        return self.first_divergence is None

    def to_json(self) -> dict:
        first = self.first_divergence
        return {
            "board": self.board, "model": self.model, "ok": self.ok,
            "first_divergence": None if first is None else
            {"index": first.index, "op": first.op, "source": first.source, "max_abs_error": first.max_abs_error},
            "steps": [{"index": s.index, "op": s.op, "source": s.source, "ok": s.ok,
                       "values": [vars(v) for v in s.values]} for s in self.steps],
        }


def compare(got: np.ndarray, want: np.ndarray) -> tuple[float, float, bool]:
    """(max abs error, tolerance, ok): integers must be identical, floats within FLOAT_RTOL."""
    want = np.asarray(want)
    got = np.asarray(got).reshape(want.shape)
    if want.size == 0:
        return 0.0, 0.0, True
    if want.dtype.kind == "f" and not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("inf"), 0.0, False  # NaN where the reference has none, or the other way round
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    err = float(np.max(np.nan_to_num(diff, nan=0.0, posinf=np.inf)))
    if want.dtype.kind in "iub":
        return err, 0.0, bool(np.array_equal(got, want))
    tol = FLOAT_RTOL * max(1.0, float(np.nanmax(np.abs(want))))
    return err, tol, bool(err <= tol)


def reference_trace(result, inputs: list) -> list:
    """Per instruction, {value index: array} the host reference wrote (the integer reference's
    arithmetic for int8 operators, in-place variants included)."""
    from mcu_gen.reference.integer import execute_instruction
    from mcu_gen.reference.interpreter import run_reference_trace

    return run_reference_trace(result.program, inputs, execute_instruction)[1]


def used_later(program):
    """A function of (k, value): whether the value's bytes matter after instruction k, i.e. it lives past step k
    in the planner's lifetimes (a later instruction reads it or a view of it, tensor lists included) or the
    program returns or keeps it (outputs, state). A kernel's work tensor lives for its own step only."""
    from mcu_gen.plan.planner import alias_root, lifetimes, links

    aliases, iv = links(program), lifetimes(program)
    kept = {alias_root(aliases, v) for v in list(program.outputs) + list(program.states)}

    def used(k: int, v: int) -> bool:
        r = alias_root(aliases, v)
        return r in kept or (r in iv and iv[r].end > k)
    return used


def debug_link(result, link, inputs=None, progress=None) -> DebugResult:
    """Steps `result`'s program through a connected device (its program must be active). A
    program with state is RESET first: the device steps from the initial state, as the host
    reference's trace does (an earlier run would have moved the device's state on)."""
    program = result.program
    one = device_inputs(result, host_inputs(result, inputs, n=1)[0])
    trace = reference_trace(result, one)
    if program.states:
        link.reset()
    link.write_inputs(one)
    device_index = pte.device_indices(program, result.pte_bytes)  # the .pte may number values differently
    steps = []
    n = len(program.instructions)
    used = used_later(program)
    for k, ins in enumerate(program.instructions):
        link.run_range(k, k + 1)
        step = StepCheck(k, ins.op, ins.source or "")
        for v, want in trace[k].items():
            if not used(k, v):
                continue  # nothing reads it later (a kernel's work tensor, e.g. mcu::gru's): no result to compare
            t = program.tensor(v)
            got = value_from_bytes(program, v, link.read_value(device_index[v], t.nbytes))
            err, tol, ok = compare(got, want)
            step.values.append(ValueCheck(v, list(t.shape), t.dtype, err, tol, ok))
        steps.append(step)
        if progress:
            progress(k + 1, n)
    name = program.meta.get("model") or (result.spec.name if result.spec is not None else "program")
    return DebugResult(result.board.name, name, steps)


def debug(model=None, *, board: str = "mps2-an505", port: str | None = None, pte_path=None, out=None, inputs=None,
          quantize=None, io: str = "float32", timeout: float = 60.0, result=None, elf=None, progress=None,
          **build_options) -> DebugResult:
    """Builds (unless `result`, a BuildResult, is given) and steps the program on the board.
    `elf` replaces the build's firmware (e.g. a firmware with an instrumented kernel)."""
    if result is None:
        from mcu_gen.firmware.builder import build

        result = build(model, board=board, pte_path=pte_path, out=out, quantize=quantize, io=io,
                       **{"debug": True, **build_options})
    with open_device(result.board, elf or result.elf, port=port, run_timeout=timeout) as link:
        ensure_program(link, result)
        return debug_link(result, link, inputs, progress)


def format_report(r: DebugResult) -> str:
    lines = []
    for s in r.steps:
        mark = "ok  " if s.ok else "DIFF"
        tol = max((v.tolerance for v in s.values), default=0.0)
        shapes = ", ".join("x".join(map(str, v.shape)) + f" {v.dtype}" for v in s.values)
        lines.append(f"{mark} {s.index:3d} {s.op:40s} {shapes:24s} max abs error {s.max_abs_error:.3g}"
                     f" (tolerance {tol:.3g})")
    first = r.first_divergence
    if first is None:
        lines.append(f"every intermediate tensor of {r.model} on {r.board} matches the host reference")
    else:
        where = first.source or "(no source line recorded)"
        lines.append(f"first divergence: instruction {first.index} {first.op} "
                     f"(max abs error {first.max_abs_error:.3g})\n  at {where}")
    return "\n".join(lines)
