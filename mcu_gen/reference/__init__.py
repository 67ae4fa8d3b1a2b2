"""Stage 6, reference: what the device must compute, on the host. One interpreter loop
(interpreter.interpret) runs the fp32 torch-op reference and the int8 integer reference
(integer.py, bit-exact with the device kernels); inputs.py makes input sets, ethosu_parity.py
checks NPU subgraphs. Takes a Program and inputs; gives the outputs the device must reproduce.

    outputs = run_reference(program, inputs)    # numpy arrays in, numpy arrays out
"""
from mcu_gen.program.ir import Program
from mcu_gen.reference.integer import execute_instruction, is_int8_op, run_int8_reference
from mcu_gen.reference.interpreter import (  # noqa: F401
    OperatorFailed, ReferenceError, ReferenceUnsupported, execute_portable, interpret)


def run_reference(program: Program, inputs, state: dict | None = None) -> list:
    """Run ``program`` on ``inputs`` (numpy arrays, one per program input).
    Programs with int8 (cortex_m::) operators run on the integer reference,
    which is bit-exact with the device kernels. ``state``: see interpreter.interpret (a dict
    carried from one call to the next runs a sequence the way the device does)."""
    if any(is_int8_op(ins.op) for ins in program.instructions):
        return run_int8_reference(program, inputs, state)
    return interpret(program, inputs, execute_portable, state=state)[0]


class PlannedExecutionError(ReferenceError):
    """Running in the planned arena gives other outputs than running every tensor on its own."""


def check_planned_execution(program: Program, inputs) -> None:
    """Runs the (planned) program twice on the host, each tensor in its own buffer and all of
    them in one arena at the planned offsets, and raises PlannedExecutionError unless every
    output is identical: a memory plan that overlaps live tensors shows here, independently
    of the device and of check_plan."""
    unplanned, _ = interpret(program, inputs, execute_instruction)
    planned, _ = interpret(program, inputs, execute_instruction, shared_arena=True)
    for k, (a, b) in enumerate(zip(unplanned, planned)):
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            raise PlannedExecutionError(
                f"output {k}: running in the planned arena differs from running every tensor in its own buffer "
                "(the memory plan overlaps tensors that are live together)")
