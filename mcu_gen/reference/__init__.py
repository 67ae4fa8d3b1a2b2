"""Stage 6, reference: what the device must compute, on the host. One interpreter loop
(interpreter.interpret) runs the fp32 torch-op reference and the int8 integer reference
(integer.py, bit-exact with the device kernels); inputs.py makes input sets, ethosu_parity.py
checks NPU subgraphs. Takes a Program and inputs; gives the outputs the device must reproduce.

    outputs = run_reference(program, inputs)    # numpy arrays in, numpy arrays out
"""
from mcu_gen.program.ir import Program
from mcu_gen.reference.integer import is_int8_op, run_int8_reference
from mcu_gen.reference.interpreter import ReferenceError, _execute, interpret  # noqa: F401


def run_reference(program: Program, inputs, state: dict | None = None) -> list:
    """Run ``program`` on ``inputs`` (numpy arrays, one per program input).
    Programs with int8 (cortex_m::) operators run on the integer reference,
    which is bit-exact with the device kernels. ``state``: see interpreter.interpret (a dict
    carried from one call to the next runs a sequence the way the device does)."""
    if any(is_int8_op(ins.op) for ins in program.instructions):
        return run_int8_reference(program, inputs, state)
    return interpret(program, inputs, _execute, state=state)[0]
