"""Programs with several methods (docs/methods.md): the schedule of calls they are verified on and the
check (SELECT_METHOD before each change of method, every call compared with PyTorch calling the same
methods in the same order)."""
from __future__ import annotations

import numpy as np

from mcu_gen.firmware.builder import BuildResult
from mcu_gen.device.compare import (LinkCheck, check_program_id, equal_values, identical_outputs, is_int8_program,
                                    verify_outputs)
from mcu_gen.device.session import count_from_ticks
from mcu_gen.capture.model_file import output_leaves
from mcu_gen.reference.inputs import random_inputs, to_numpy


METHOD_CALLS = 8  # calls per method a program with several methods is verified on (without test inputs)
METHOD_BLOCK = 4  # consecutive calls of one method before the next method is called


def method_inputs(result: BuildResult, n: int = METHOD_CALLS, seed: int = 0) -> dict:
    """{method name: input tuples} a program with several methods is verified on: each method's test inputs
    from the model file's methods() (third item), else ``n`` seeded random ones."""
    specs = {m.name: m for m in (getattr(result.spec, "methods", None) or [])}
    out = {}
    for k, m in enumerate(result.program.methods):
        ms = specs.get(m.name)
        if ms is not None and ms.test_inputs:
            out[m.name] = [tuple(to_numpy(x) for x in t) for t in ms.test_inputs]
        else:
            out[m.name] = random_inputs(m, n, seed=seed + k)
    return out


def method_schedule(inputs: dict, block: int = METHOD_BLOCK) -> list:
    """(method, inputs) calls: ``block`` calls of each method in turn, round after round, so every method
    is called after every other and several times in a row (state carried from call to call)."""
    calls, j = [], 0
    longest = max((len(v) for v in inputs.values()), default=0)
    while j < longest:
        for name, items in inputs.items():
            calls += [(name, x) for x in items[j: j + block]]
        j += block
    return calls


def _expected_method_calls(result: BuildResult, calls: list) -> tuple[list, str]:
    """What every call of the schedule must return: PyTorch calling the methods, in order, on one fresh
    copy of the model (buffers as built), else the reference interpreter carrying the state by name."""
    import copy

    import torch

    spec = result.spec
    if spec is not None and getattr(spec, "methods", None):
        root = copy.deepcopy(spec.module).eval()
        fns = {m.name: m.call(root) for m in spec.methods}
        wants = []
        with torch.no_grad():
            for name, x in calls:
                out = fns[name](*[torch.from_numpy(np.asarray(a, order="C")) for a in x])
                wants.append([to_numpy(o) for o in output_leaves(out)])
        return wants, "pytorch, method by method"
    from mcu_gen.reference import run_reference

    named: dict = {}
    wants = []
    for name, x in calls:
        m = result.program.method(name)
        state = {i: named[n] for i, n in zip(m.states, m.state_names) if n in named}
        wants.append([np.asarray(o) for o in run_reference(m, list(x), state)])
        named.update({n: state[i] for i, n in zip(m.states, m.state_names) if i in state})
    return wants, "reference interpreter (torch ops), method by method"


def check_methods_link(link, result: BuildResult, inputs: dict | None = None, progress=None) -> LinkCheck:
    """A program with several methods (docs/methods.md): a schedule of calls (method_schedule) runs on the
    device, SELECT_METHOD before each change of method, and every call's outputs are compared with PyTorch
    calling the same methods in the same order on one copy of the model (fp32 within the usual tolerance).
    With state, RESET first, and RESET + the same schedule again must give identical outputs."""
    program, b = result.program, result.board
    hello = link.hello()
    check_program_id(hello, result)
    if result.report.get("quantize") or is_int8_program(program):
        raise RuntimeError("programs with several methods are fp32 only for now")
    inputs = inputs if inputs is not None else method_inputs(result)
    unknown = [n for n in inputs if n not in program.method_names]
    if unknown:
        raise RuntimeError(f"no method {', '.join(map(repr, unknown))} in the program (it has "
                           f"{', '.join(program.method_names)})")
    calls = method_schedule(inputs)
    wants, reference = _expected_method_calls(result, calls)
    stateful = bool(program.all_states)
    c = LinkCheck(verified=True, max_abs_error=0.0, tolerance=0.0, reference=reference, counts=[], outputs=[],
                  firmware_version=hello.firmware_version)
    rows = {m.name: {"name": m.name, "calls": 0, "max_abs_error": 0.0, "tolerance": 0.0, "verified": True,
                     "instructions": None, "select_instructions": None} for m in program.methods}

    def play(record: bool) -> list:
        active, outs = None, []
        if stateful:
            link.reset()
        for k, ((name, x), want) in enumerate(zip(calls, wants)):
            if name != active:
                _, ticks = link.select_method(name)
                active = name
                if record:
                    row = rows[name]
                    n = count_from_ticks(b, ticks)
                    row["select_instructions"] = max(row["select_instructions"] or 0, n)
            got, ticks = link.infer(list(x), rerun=not stateful)
            outs.append(got)
            if not record:
                continue
            err, tol, ok = verify_outputs(got, want)
            row = rows[name]
            row["calls"] += 1
            row["max_abs_error"], row["tolerance"] = max(row["max_abs_error"], err), max(row["tolerance"], tol)
            row["verified"] = row["verified"] and ok
            n = count_from_ticks(b, ticks)
            row["instructions"] = max(row["instructions"] or 0, n)
            c.max_abs_error, c.tolerance = max(c.max_abs_error, err), max(c.tolerance, tol)
            c.reference_max_abs_error = c.max_abs_error
            c.identical = c.identical and equal_values(got, want)
            c.verified = c.verified and ok
            c.counts.append(n)
            c.outputs.append(got)
            if progress:
                progress(k + 1, len(calls))
        return outs

    first = play(True)
    if stateful:  # RESET restores every method's state: the same schedule gives the same outputs
        again = play(False)
        c.reset_identical = all(identical_outputs(a, f) for a, f in zip(again, first))
        c.verified = c.verified and c.reset_identical
        c.steps = len(calls)
    c.methods = list(rows.values())
    return c
