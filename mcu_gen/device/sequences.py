"""Programs with state (docs/state.md): the sequences they are verified on and the step-by-step check
(RESET, every step compared, RESET again and the same outputs)."""
from __future__ import annotations

import numpy as np

from mcu_gen.firmware.builder import BuildResult
from mcu_gen.program.ir import Program
from mcu_gen.device.compare import (INT8_REFERENCE, LinkCheck, check_device_quant_params, check_program_id,
                                    equal_values, identical_outputs, int8_program_outputs_match, is_classifier,
                                    is_int8_program,
                                    max_abs_difference, quant_error, verify_outputs)
from mcu_gen.device.session import count_from_ticks
from mcu_gen.capture.model_file import output_leaves
from mcu_gen.reference.inputs import quantize_inputs, sequence_steps, to_numpy


SEQUENCE_STEPS = 16  # steps of the seeded random sequence a stateful model without test_sequences() gets


def default_sequences(result: BuildResult, n_steps: int = SEQUENCE_STEPS, seed: int = 0) -> list:
    """The sequences a program with state is verified on: the model file's test_sequences(),
    else one sequence of ``n_steps`` steps drawn like its calibration steps (reference.inputs.sequence_steps)."""
    spec = result.spec
    seqs = getattr(spec, "test_sequences", None) if spec is not None else None
    if seqs:
        return [[tuple(to_numpy(x) for x in step) for step in seq] for seq in seqs]
    return [sequence_steps(spec, result.program, n_steps, seed=seed)[0]]


def _module_steps(module, seq: list) -> list:
    """PyTorch running ``seq`` step by step on a fresh copy of ``module`` (its buffers as built)."""
    import copy

    import torch

    m = copy.deepcopy(module).eval()
    outs = []
    with torch.no_grad():
        for step in seq:
            out = m(*[torch.from_numpy(np.asarray(x, order="C")) for x in step])
            outs.append([to_numpy(o) for o in output_leaves(out)])
    return outs


def _float_inputs(program: Program, step) -> tuple:
    """One step's inputs as floats: int8 ones dequantized with their input's parameters."""
    from mcu_gen.quantize.arith import dequantize_f32

    out = []
    for x, i in zip(step, program.inputs):
        t, x = program.tensor(i), np.asarray(x)
        out.append(dequantize_f32(x, t.scale, t.zero_point) if x.dtype == np.int8 and t.scale is not None else x)
    return tuple(np.asarray(x, np.float32) for x in out)


def check_sequences(link, result: BuildResult, sequences: list, progress=None, initial_module=None) -> LinkCheck:
    """A program with state: each sequence is fed one step at a time after a RESET and every step's
    outputs are compared with PyTorch running the same module step by step (a fresh copy per sequence;
    without a model, the reference interpreter carrying the state); an int8 program's outputs must
    equal the host integer reference run step by step with its state carried, bit for bit (and their
    error against PyTorch step by step is reported). Then RESET and the same sequence again must give
    identical outputs (RESET restores the initial state)."""
    from mcu_gen.reference import run_reference

    program, spec, b = result.program, result.spec, result.board
    hello = link.hello()
    check_program_id(hello, result)
    quantized = bool(result.report.get("quantize"))
    if quantized:
        check_device_quant_params(hello, program)
    module = initial_module
    if module is None and spec is not None:
        module = spec.module if spec.module is not None else spec.exported_program.module()
    int8 = is_int8_program(program)
    c = LinkCheck(verified=True, max_abs_error=0.0, tolerance=0.0, reference="", counts=[], outputs=[],
                  firmware_version=hello.firmware_version)
    c.reset_identical = True
    total = sum(len(seq) for seq in sequences)
    top1, n_float = 0, 0
    for seq in sequences:
        fp = None  # PyTorch step by step, for an int8 build's quantization error
        if module is not None and not int8:
            wants, c.reference = _module_steps(module, seq), "pytorch, step by step"
        else:
            if quantized and module is not None:  # int8 steps (--io int8, random) dequantized for PyTorch
                fp = _module_steps(module, [_float_inputs(program, step) for step in seq])
            seq = [quantize_inputs(program, step) for step in seq] if quantized else seq
            state: dict = {}
            wants = [[np.asarray(o) for o in run_reference(program, list(step), state)] for step in seq]
            c.reference = (INT8_REFERENCE if int8 else "reference interpreter (torch ops)") + ", step by step"
        link.reset()
        first = []
        for k, (step, want) in enumerate(zip(seq, wants)):
            got, ticks = link.infer(list(step), rerun=False)
            if int8:
                exact = int8_program_outputs_match(program, got, want)
                c.bit_exact = exact and c.bit_exact is not False
                c.identical = c.identical and exact
                c.verified = c.verified and exact
                c.reference_max_abs_error = max(c.reference_max_abs_error, max_abs_difference(got, want))
                if fp is not None:
                    err, hit = quant_error(program, got, fp[k])
                    c.max_abs_error, top1, n_float = max(c.max_abs_error, err), top1 + hit, n_float + 1
            else:
                err, tol, ok = verify_outputs(got, want)
                c.max_abs_error, c.tolerance = max(c.max_abs_error, err), max(c.tolerance, tol)
                c.reference_max_abs_error = c.max_abs_error
                c.identical = c.identical and equal_values(got, want)
                c.verified = c.verified and ok
            c.counts.append(count_from_ticks(b, ticks))
            c.outputs.append(got)
            first.append(got)
            c.steps += 1
            if progress:
                progress(c.steps, total)
        link.reset()  # the same sequence again from the initial state: the same outputs, bit for bit
        for step, before in zip(seq, first):
            again, _ = link.infer(list(step), rerun=False)
            same = identical_outputs(again, before)
            c.reset_identical = c.reset_identical and same
        c.verified = c.verified and c.reset_identical
    if quantized and n_float:
        c.quant_max_abs_error = c.max_abs_error
        c.top1_agreement = top1 / n_float if is_classifier(program) else None
    return c
