"""`mcu-gen run`: build, boot the emulated board, infer over serial, compare with PyTorch."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from mcu_gen.firmware.builder import BuildResult, build
from mcu_gen.device.session import DEFAULT_RANDOM_INPUTS, count_from_ticks, default_inputs, described_inputs  # noqa: F401
from mcu_gen.capture.model_file import output_leaves
from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs, random_inputs, to_numpy  # noqa: F401 (API)

from mcu_gen.device.compare import (  # noqa: F401 (API: mcu_gen.runner.<name>)
    INT8_REFERENCE, LinkCheck, check_device_quant_params, check_program_id, equal_values, expected_outputs,
    identical_outputs, int8_program_outputs_match, is_classifier, is_int8_program, libm_island_outputs,
    max_abs_difference, quant_error, verify_outputs)
from mcu_gen.device.method_calls import (  # noqa: F401 (API)
    METHOD_BLOCK, METHOD_CALLS, check_methods_link, method_inputs, method_schedule)
from mcu_gen.device.sequences import SEQUENCE_STEPS, check_sequences, default_sequences  # noqa: F401 (API)
from mcu_gen.reference.inputs import sequence_steps

@dataclass
class RunResult:
    board: str
    verified: bool
    max_abs_error: float
    tolerance: float
    arena_bytes: int
    arena_lower_bound_bytes: int
    pte_bytes: int
    flash_bytes: int
    ram_bytes: int
    instructions_per_inference: int | None  # None on the host board (no instruction count)
    n_inferences: int
    reference: str  # what the device was compared with
    out: str
    outputs: list = field(default_factory=list, repr=False)
    instructions: list = field(default_factory=list)
    # int8 runs (quantize="int8"): device outputs identical to the host integer reference,
    # and the quantization error against the fp32 model.
    quantize: str | None = None
    io: str = "float32"
    bit_exact: bool | None = None
    quant_max_abs_error: float | None = None
    top1_agreement: float | None = None
    # The stack: its high-water mark measured on the device (HELLO, after the runs) and what the image
    # reserves (measured + margin: stack.stack_reserve), None when the board does not measure it.
    stack_used_bytes: int | None = None
    stack_reserved_bytes: int | None = None
    # RAM of the image a user deploys (.data + .bss + reserved stack), by component (size_report.RAM_KEYS).
    ram: dict = field(default_factory=dict)
    upload: bool = False
    # per output: max_abs_error, rms_error against fp32, top1_agreement ((N, K) outputs)
    quant_output_errors: list | None = None
    # Programs with state: sequences run step by step (n_inferences counts the steps), and whether
    # RESET + the same sequence again gave identical outputs.
    n_sequences: int = 0
    reset_identical: bool | None = None
    state_bytes: int = 0
    # Estimated cycles (QEMU plugin counting instructions by class x the core's cycle table,
    # mcu_gen/device/cycles.py, docs/cycles.md), of the inference with the most estimated cycles;
    # None with the reason in cycles_unavailable when there is no estimate.
    estimated_cycles_per_inference: int | None = None
    estimated_cycles_range: list | None = None  # [low, high] the table's ranges allow
    estimated_ms_per_inference: float | None = None  # at clock_hz
    clock_hz: int | None = None
    cycle_model: str | None = None
    cycle_assumptions: str | None = None  # what the estimate assumes (cycles.ASSUMPTIONS)
    cycles_unavailable: str | None = None
    estimated_cycles: list = field(default_factory=list)  # per inference (None: not found)
    instruction_classes: dict = field(default_factory=dict)  # executed per class, that inference
    address_stalls: int | None = None  # its loads / stores that waited a cycle for their address
    estimated_cycles_by_class: dict = field(default_factory=dict)  # its estimated cycles per class
    # Programs with several methods: per method its name, calls, max abs error, tolerance, verified,
    # instructions per call (max) and the instructions SELECT_METHOD took to switch to it (max).
    methods: list = field(default_factory=list)
    # The host board: the slowest inference's time in the native process (CLOCK_MONOTONIC ns), this machine's.
    native_ns_per_inference: int | None = None
    # Which inputs were run: the model file's test inputs, held-out calibration samples, inputs drawn
    # like the calibration data (reference/inputs.py), or given ones.
    inputs_used: str = ""
    # int8: how it was calibrated, every calibration method's error on the user's data, and the
    # method recommended when another is measurably better (report.json "calibration").
    calibration: dict | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("outputs")
        return d



def check_link(link, result: BuildResult, inputs: list, progress=None) -> LinkCheck:
    """Runs `inputs` on the device behind `link` (QEMU's pty or a real board) and compares.
    fp32 builds: with PyTorch (model file) or the reference interpreter, within 1e-4 relative.
    int8 builds (--quantize int8): identical to the host integer reference, plus the quantization
    error of the dequantized outputs against the fp32 model when the model is known."""
    from mcu_gen.device.link import DeviceError

    try:
        return _check_link(link, result, inputs, progress)
    except DeviceError as e:
        raise e.at_instruction(result.program) from None


def _check_link(link, result: BuildResult, inputs: list, progress=None) -> LinkCheck:
    import torch

    from mcu_gen.reference.integer import run_int8_reference

    if result.program.more_methods:  # several methods: `inputs` is {method: [input tuples]} or None
        return check_methods_link(link, result, inputs if isinstance(inputs, dict) else None, progress)
    if result.program.states:  # a program with state: `inputs` are steps of one sequence, or sequences
        seqs = inputs if inputs and isinstance(inputs[0], list) else [list(inputs)]
        return check_sequences(link, result, seqs, progress)
    program, spec, b = result.program, result.spec, result.board
    hello = link.hello()
    check_program_id(hello, result)
    check_device_quant_params(hello, program)
    int8_build = bool(result.report.get("quantize"))
    c = LinkCheck(verified=True, max_abs_error=0.0, tolerance=0.0, reference="", counts=[], outputs=[],
                  firmware_version=hello.firmware_version)
    top1 = 0
    per_output = []
    from mcu_gen.reference.accuracy import output_errors

    for k, one in enumerate(inputs):
        if int8_build:
            device_in = quantize_inputs(program, one)
            got, ticks = link.infer(list(device_in))
            want = run_int8_reference(program, list(device_in))
            exact = int8_program_outputs_match(program, got, want)
            c.reference_max_abs_error = max(c.reference_max_abs_error, max_abs_difference(got, want))
            c.identical = c.identical and identical_outputs(got, want)
            c.verified = c.verified and exact
            c.bit_exact = c.verified
            c.reference = "host int8 reference (mcu_gen.quantize.reference), bit for bit" + (
                "; float outputs of fp32 islands whose arithmetic the reference does not repeat bit for bit (libm "
                "calls, PyTorch's summation order): within the fp32 tolerance"
                if libm_island_outputs(program) else "")
            if spec is not None and all(np.asarray(x).dtype.kind == "f" or program.tensor(i).dtype != "int8"
                                        for x, i in zip(one, program.inputs)):  # (integer ids are model inputs)
                with torch.no_grad():
                    fp = spec.module(*[torch.from_numpy(np.asarray(x, order="C")) for x in one])
                fp = [to_numpy(o) for o in output_leaves(fp)]
                err, hit = quant_error(program, got, fp)
                c.max_abs_error, top1 = max(c.max_abs_error, err), top1 + hit
                per_output.append(output_errors(program, dequantize_outputs(program, got), fp,
                                                {program.tensor(i).shape for i in program.inputs}))
        else:
            got, ticks = link.infer(list(one))
            want, c.reference = expected_outputs(result, one)
            err, tol, ok = verify_outputs(got, want)
            if c.reference == INT8_REFERENCE:  # an int8 .pte: identical to the integer reference, or wrong
                exact = int8_program_outputs_match(program, got, want)
                c.bit_exact = exact and c.bit_exact is not False
                ok = ok and exact
            c.max_abs_error, c.tolerance = max(c.max_abs_error, err), max(c.tolerance, tol)
            c.reference_max_abs_error = c.max_abs_error
            c.identical = c.identical and equal_values(got, want)
            c.verified = c.verified and ok
        c.counts.append(count_from_ticks(b, ticks))
        c.outputs.append(got)
        if progress:
            progress(k + 1, len(inputs))
    if int8_build and spec is not None:
        c.quant_max_abs_error = c.max_abs_error
        if per_output:  # over all inputs: worst max error, mean RMS and top-1 agreement
            c.quant_output_errors = []
            for k in range(len(per_output[0])):
                rows = [one[k] for one in per_output]
                top = [r["top1_agreement"] for r in rows if r["top1_agreement"] is not None]
                c.quant_output_errors.append({"max_abs_error": max(r["max_abs_error"] for r in rows),
                                              "rms_error": float(np.mean([r["rms_error"] for r in rows])),
                                              "top1_agreement": float(np.mean(top)) if top else None})
        c.top1_agreement = (top1 / len(inputs)) if is_classifier(program) and inputs else None
    return c



def run(model=None, *, board: str = "mps2-an505", pte_path=None, out=None, inputs=None, n_random: int | None = None,
        fuse: bool = True, timeout: float = 60.0, progress=None, quantize=None, io: str = "float32",
        calibration=None, max_inputs: int | None = None, backend: str = "auto", cmsis_nn_path=None,
        value_cache=None, upload: bool = False, frame_bytes: int | None = None,
        measure_stack: bool = True, kernels: str = "auto", cycles: bool = True,
        methods: list | None = None, ram_regions=None, arena_region: str | None = None,
        calibration_method: str | None = None, bias_correction: bool = False) -> RunResult:
    """Builds, runs `inputs` on the emulator and compares. With measure_stack (default) the first image keeps
    the linker script's stack; the device's stack high-water mark after the runs decides the stack of the
    deployable image (stack.stack_reserve), which is relinked and verified again: the figures returned are
    the deployable image's. With ``cycles`` (default) the final session also counts instructions by
    class (a QEMU plugin) for estimated cycles (docs/cycles.md); without it, or when the plugin cannot
    be had, the estimate fields are None and ``cycles_unavailable`` says why. ``methods``: of a program
    with several, verify only these (names)."""
    result = build(model, board=board, pte_path=pte_path, out=out, fuse=fuse, quantize=quantize, io=io,
                   calibration=calibration, backend=backend, cmsis_nn_path=cmsis_nn_path, value_cache=value_cache,
                   upload=upload, frame_bytes=frame_bytes, kernels=kernels, ram_regions=ram_regions,
                   arena_region=arena_region, calibration_method=calibration_method, bias_correction=bias_correction)
    b = result.board
    if not b.runs_here:
        raise RuntimeError(
            f"board {b.name} has no emulator: the firmware is built in {result.out}; flash it "
            f"(`mcu-gen flash --board {b.name} --build {result.out}`), then check it with "
            f"`mcu-gen verify --port PORT --build {result.out}`"
        )
    stateful = bool(result.program.states)
    if methods:
        unknown = [n for n in methods if n not in result.program.method_names]
        if unknown:
            raise RuntimeError(f"--method {', '.join(unknown)}: the program has no such method (it has "
                               f"{', '.join(result.program.method_names)})")
    if result.program.more_methods:
        inputs = inputs if isinstance(inputs, dict) else method_inputs(result, n_random or METHOD_CALLS)
        if methods:
            inputs = {n: inputs[n] for n in methods}
        stateful = False  # verified as a schedule of method calls (check_methods_link)
    used = "given inputs"
    if result.program.more_methods:
        used = "each method's test inputs, else seeded random ones"
    elif inputs is None and stateful:
        inputs = default_sequences(result)
        used = ("the model's test_sequences()" if getattr(result.spec, "test_sequences", None) else
                sequence_steps(result.spec, result.program, len(inputs[0]))[1])
    elif inputs is None:
        inputs, used = described_inputs(result, n_random, max_inputs)
    elif max_inputs is not None:
        inputs = inputs[:max_inputs]
    first_stack, c, classes, counter = _verify_here(b, result, inputs, timeout, progress, cycles)
    stack_used = first_stack
    bound = result.report["stack"].get("static_bound_bytes")
    if bound is not None and first_stack is not None:
        # The build reserved the static bound (firmware/stack_bound.py): the device's high-water mark checks it.
        if first_stack > bound:
            raise RuntimeError(f"the stack used on the device ({first_stack:,} B) exceeds the static bound of "
                               f"{bound:,} B the build computed: a bug in mcu-gen's stack analysis; "
                               f"{result.out / 'firmware.elf'} is not safe to deploy (build it with --stack-bytes N)")
        result.report["stack"]["measured_bytes"] = first_stack
        from mcu_gen.firmware.report import write_reports

        write_reports(result.out, result.report)
    elif measure_stack and c.verified and first_stack:
        from mcu_gen.firmware.builder import relink
        from mcu_gen.firmware.stack import stack_reserve

        relink(result, stack_reserve(first_stack), measured=first_stack)
        stack_used, c, classes, counter = _verify_here(b, result, inputs, timeout, progress, cycles)
        reserved = result.report["stack"]["reserved_bytes"]
        if stack_used is None or stack_used >= reserved:
            raise RuntimeError(f"the stack overflowed its {reserved:,} B (measured {first_stack:,} B before): "
                               f"{result.out / 'firmware.elf'} is not safe to deploy")
        result.report["stack"].update(measured_bytes=stack_used, measurement_build_bytes=first_stack)
        from mcu_gen.firmware.report import write_reports

        write_reports(result.out, result.report)
    elif first_stack is not None:
        result.report["stack"]["measured_bytes"] = first_stack
        from mcu_gen.firmware.report import write_reports

        write_reports(result.out, result.report)
    r = result.report
    return RunResult(
        board=b.name, verified=c.verified, max_abs_error=c.max_abs_error, tolerance=c.tolerance,
        arena_bytes=r["arena_bytes"], arena_lower_bound_bytes=r["arena_lower_bound_bytes"], pte_bytes=r["pte_bytes"],
        flash_bytes=r["flash_bytes"], ram_bytes=r["ram_bytes"],
        instructions_per_inference=max(c.counts) if c.counts and not b.is_native else None,
        n_inferences=len(c.counts),
        reference=c.reference, out=str(result.out), outputs=c.outputs, instructions=[] if b.is_native else c.counts,
        native_ns_per_inference=max(c.counts) if c.counts and b.is_native else None,
        quantize=quantize, io=io if quantize else "float32", bit_exact=c.bit_exact,
        quant_max_abs_error=c.quant_max_abs_error, top1_agreement=c.top1_agreement,
        stack_used_bytes=stack_used or None, stack_reserved_bytes=r["stack"]["reserved_bytes"],
        ram=dict((r.get("size") or {}).get("ram", {})), upload=bool(upload),
        quant_output_errors=c.quant_output_errors,
        n_sequences=len(inputs) if stateful else 0, reset_identical=c.reset_identical,
        state_bytes=sum(m.tensor(i).nbytes for _, m, i in result.program.all_states),
        **_cycle_fields(b, counter.reason, classes, c.counts),
        methods=c.methods, inputs_used=used, calibration=r.get("calibration"),
    )


def _verify_here(b, result: BuildResult, inputs, timeout: float, progress, cycles: bool):
    """One QEMU session (a native process for the host board) of check_link, with the cycle-counting plugin
    when it can be had: (the device's stack high-water mark (None where the board does not measure it),
    LinkCheck, ClassCounts per inference (None where none), CycleCounter). A QEMU that does not start with
    the plugin is started again without it (the counter's reason then says why)."""
    from mcu_gen.device.cycles import CycleCounter
    from mcu_gen.device.link import LinkError
    from mcu_gen.device.session import local_session

    if b.is_native:
        counter = CycleCounter(b, result.elf, reason="the host board runs natively: there is no instruction count")
    elif cycles:
        counter = CycleCounter.for_board(b, result.elf)
    else:
        counter = CycleCounter(b, result.elf, reason="not asked for (--no-cycles)")
    args = counter.qemu_args()
    session = local_session(b, result.elf, run_timeout=timeout, extra_args=args)
    try:
        link = session.start()
        if args:
            link.hello()  # QEMU opens the serial pty before it loads plugins: a bad plugin shows here
    except LinkError as e:
        if not args:
            raise
        session.close()
        said = [line for line in session.log if "plugin" in line.lower()]
        counter.disable("QEMU did not start with the cycle-counting plugin: "
                        + (said[-1] if said else str(e).splitlines()[0]))
        session = local_session(b, result.elf, run_timeout=timeout)
        link = session.start()
    try:
        c = check_link(link, result, inputs, progress)
        stack = None if b.is_native else link.hello().stack_used  # a process's stack is the OS's
        link.exit(0)
    finally:
        session.close()
    classes = counter.per_inference(c.counts)
    counter.close()
    return stack, c, classes, counter


def _cycle_fields(b, reason: str, found: list, counts: list) -> dict:
    """RunResult's estimate fields from what the plugin counted per inference (`reason` when nothing)."""
    from mcu_gen.device.cycles import ASSUMPTIONS, CyclesUnavailable, cycles_by_class, estimate

    fields = {"clock_hz": b.clock_hz}
    try:
        ests = [estimate(f, b.core) if f is not None else None for f in found]
    except CyclesUnavailable as e:
        return {**fields, "cycles_unavailable": str(e)}
    if not counts or any(e is None for e in ests):
        missing = sum(e is None for e in ests)
        why = reason or f"{missing} of {len(counts)} inferences were not found in the plugin's output"
        return {**fields, "cycles_unavailable": why, "estimated_cycles": [e and e.cycles for e in ests]}
    k = max(range(len(ests)), key=lambda i: (ests[i].cycles, counts[i]))
    worst = ests[k]
    return {**fields, "estimated_cycles_per_inference": worst.cycles,
            "estimated_cycles_range": [worst.low, worst.high],
            "estimated_ms_per_inference": worst.cycles / b.clock_hz * 1e3,
            "cycle_model": f"{b.core} (mcu_gen/device/cycles.py, docs/cycles.md)", "cycle_assumptions": ASSUMPTIONS,
            "estimated_cycles": [e.cycles for e in ests], "instruction_classes": found[k].nonzero(),
            "address_stalls": sum(found[k].stalls.values()),
            "estimated_cycles_by_class": cycles_by_class(found[k], b.core)}


