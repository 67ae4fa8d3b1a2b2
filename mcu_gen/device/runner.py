"""`mcu-gen run`: build, boot the emulated board, infer over serial, compare with PyTorch."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from mcu_gen.firmware.builder import BuildResult, build
from mcu_gen.program.ir import Program
from mcu_gen.device.session import DEFAULT_RANDOM_INPUTS, count_from_ticks, default_inputs  # noqa: F401 (API)
from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs, random_inputs, to_numpy  # noqa: F401 (API)

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
    instructions_per_inference: int | None
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
    # reserves (measured + margin: builder.stack_reserve), None when the board does not measure it.
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
    cycles_unavailable: str | None = None
    estimated_cycles: list = field(default_factory=list)  # per inference (None: not found)
    instruction_classes: dict = field(default_factory=dict)  # executed per class, that inference
    estimated_cycles_by_class: dict = field(default_factory=dict)  # its estimated cycles per class
    # Programs with several methods: per method its name, calls, max abs error, tolerance, verified,
    # instructions per call (max) and the instructions SELECT_METHOD took to switch to it (max).
    methods: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("outputs")
        return d


def expected_outputs(result: BuildResult, inputs: tuple) -> tuple[list, str]:
    """The outputs the device must reproduce, and where they come from."""
    import torch

    spec = result.spec
    if spec is not None:
        with torch.no_grad():
            module = spec.module if getattr(spec, "module", None) is not None else spec.exported_program.module()
            out = module(*[torch.from_numpy(np.ascontiguousarray(x)) for x in inputs])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return [to_numpy(o) for o in outs], "pytorch"
    from mcu_gen.reference import run_reference

    label = INT8_REFERENCE if is_int8_program(result.program) else "reference interpreter (torch ops)"
    return [np.asarray(o) for o in run_reference(result.program, list(inputs))], label


INT8_REFERENCE = "integer reference (cortex_m ops, bit-exact)"


def is_int8_program(program: Program) -> bool:
    """A program with cortex_m:: (int8) operators, e.g. an int8 .pte exported by ExecuTorch."""
    from mcu_gen.reference.integer import is_int8_op

    return any(is_int8_op(ins.op) for ins in program.instructions)


def identical_outputs(got: list, want: list) -> bool:
    """Same count, dtypes and values (what the integer reference demands)."""
    return len(got) == len(want) and all(
        np.asarray(g).dtype == np.asarray(w).dtype and np.array_equal(np.asarray(g).reshape(np.shape(w)), w)
        for g, w in zip(got, want))


def equal_values(got: list, want: list) -> bool:
    """Same count and values, compared in the device's dtype."""
    return len(got) == len(want) and all(
        np.array_equal(np.asarray(g).reshape(np.shape(w)), np.asarray(w, dtype=np.asarray(g).dtype))
        for g, w in zip(got, want))


def max_abs_difference(got: list, want: list) -> float:
    return max((float(np.max(np.abs(np.asarray(g, np.float64).reshape(np.shape(w)) - np.asarray(w, np.float64))))
                for g, w in zip(got, want) if np.size(w)), default=0.0)


def verify_outputs(got: list, want: list) -> tuple[float, float, bool]:
    """(max abs error, tolerance, ok). Float outputs: |err| <= 1e-4 * max(1, max |finite reference|), with
    NaN and infinities where the reference has them (log(0), 0/0: PyTorch gives them, so must the device);
    integer and bool outputs (indices, masks, counts) must be equal, in the reference's dtype."""
    err, scale, ok = 0.0, 1.0, len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        g = np.asarray(g).reshape(np.shape(w))
        if w.dtype.kind != "f":
            ok = ok and g.dtype == w.dtype and np.array_equal(g, w)
            if w.size and g.dtype.kind in "biuf":
                err = max(err, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
            continue
        g, w = g.astype(np.float64), w.astype(np.float64)
        same_special = np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(
            np.where(np.isinf(w), w, 0.0), np.where(np.isinf(g), g, 0.0))
        ok = ok and same_special
        finite = np.isfinite(w) & np.isfinite(g)
        if finite.any():
            err = max(err, float(np.max(np.abs(g[finite] - w[finite]))))
            scale = max(scale, float(np.max(np.abs(w[finite]))))
    tol = 1e-4 * scale
    return err, tol, ok and err <= tol


def check_device_quant_params(hello, program: Program) -> None:
    """The scale / zero point the device reports for its I/O (HELLO's TENSOR_INFO, flags bit 0) must be the
    build's: a firmware built from another quantization would be fed wrongly quantized inputs. Tensors the
    device reports nothing for (fp32 I/O, an uploaded program) are not checked."""
    for kind, infos, indices in (("input", hello.inputs, program.inputs), ("output", hello.outputs, program.outputs)):
        for k, (info, i) in enumerate(zip(infos, indices)):
            if info.scale is None:
                continue
            t = program.tensor(i)
            if t.dtype != "int8" or t.scale is None or np.ndim(t.scale) != 0:
                raise RuntimeError(f"the device reports quantization parameters (scale {info.scale}, zero point "
                                   f"{info.zero_point}) for {kind} {k}, which the build did not quantize per tensor")
            scale = float(np.float32(t.scale))  # the device holds it as a float32
            if info.scale != scale or info.zero_point != int(t.zero_point):
                raise RuntimeError(f"{kind} {k}: the device reports scale {info.scale!r} / zero point "
                                   f"{info.zero_point}, the build quantized it with scale {scale!r} / zero point "
                                   f"{int(t.zero_point)}: the firmware does not match this build")


def is_classifier(program: Program) -> bool:
    """One (N, K) output, K >= 2, that is not the input's shape (an autoencoder is not a classifier)."""
    if len(program.outputs) != 1:
        return False
    shape = program.tensor(program.outputs[0]).shape
    return len(shape) == 2 and shape[1] >= 2 and all(program.tensor(i).shape != shape for i in program.inputs)


def quant_error(program: Program, device: list, fp32: list) -> tuple[float, int]:
    """(max abs error of the dequantized device outputs vs fp32, top-1 matches)."""
    got = dequantize_outputs(program, device)
    err = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64).reshape(np.shape(g)))))
              for g, w in zip(got, fp32))
    top1 = 0
    if is_classifier(program):
        top1 = int(np.all(np.argmax(got[0], axis=-1) == np.argmax(np.asarray(fp32[0]).reshape(got[0].shape), axis=-1)))
    return err, top1


@dataclass
class LinkCheck:
    """What comparing a device's outputs with the host's expectations found (see check_link)."""
    verified: bool
    max_abs_error: float
    tolerance: float
    reference: str
    counts: list  # instructions (emulators) or cycles (hardware) per inference
    outputs: list
    firmware_version: str = ""
    bit_exact: bool | None = None  # int8 builds and int8 programs: identical to the integer reference
    quant_max_abs_error: float | None = None
    top1_agreement: float | None = None
    quant_output_errors: list | None = None
    identical: bool = True  # every output equal, bit for bit, to what the device had to match
    reference_max_abs_error: float = 0.0  # against what the device had to match (fp32: = max_abs_error)
    reset_identical: bool | None = None  # programs with state: RESET + the same sequence gave the same outputs
    steps: int = 0  # programs with state: steps run (every sequence once)
    methods: list = field(default_factory=list)  # programs with several methods: one row per method


def check_program_id(hello, result) -> None:
    """The board must run the build's program; if it runs none because its runtime rejected the
    built-in one, say so with the runtime's error (a bug of mcu-gen: the build checked it)."""
    from mcu_gen.device.protocol import error_name

    if hello.program_id == result.program_id:
        return
    if hello.program_id == 0 and hello.builtin_status not in (0, None):
        raise RuntimeError(f"the runtime on the board rejected the firmware's built-in program "
                           f"({error_name(hello.builtin_status)}), the build in {result.out}; "
                           "`mcu-gen inspect` shows the program")
    raise RuntimeError(f"the board runs program {hello.program_id:016x}, the build in {result.out} made "
                       f"{result.program_id:016x}: flash or rebuild the firmware first")


def check_link(link, result: BuildResult, inputs: list, progress=None) -> LinkCheck:
    """Runs `inputs` on the device behind `link` (QEMU's pty or a real board) and compares.
    fp32 builds: with PyTorch (model file) or the reference interpreter, within 1e-4 relative.
    int8 builds (--quantize int8): identical to the host integer reference, plus the quantization
    error of the dequantized outputs against the fp32 model when the model is known."""
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
            exact = identical_outputs(got, want)
            c.reference_max_abs_error = max(c.reference_max_abs_error, max_abs_difference(got, want))
            c.identical = c.identical and exact
            c.verified = c.verified and exact
            c.bit_exact = c.verified
            c.reference = "host int8 reference (mcu_gen.quantize.reference), bit for bit"
            if spec is not None and all(np.asarray(x).dtype.kind == "f" for x in one):
                with torch.no_grad():
                    fp = spec.module(*[torch.from_numpy(np.ascontiguousarray(x)) for x in one])
                fp = [to_numpy(o) for o in (fp if isinstance(fp, (tuple, list)) else [fp])]
                err, hit = quant_error(program, got, fp)
                c.max_abs_error, top1 = max(c.max_abs_error, err), top1 + hit
                per_output.append(output_errors(program, dequantize_outputs(program, got), fp,
                                                {program.tensor(i).shape for i in program.inputs}))
        else:
            got, ticks = link.infer(list(one))
            want, c.reference = expected_outputs(result, one)
            err, tol, ok = verify_outputs(got, want)
            if c.reference == INT8_REFERENCE:  # an int8 .pte: identical to the integer reference, or wrong
                exact = identical_outputs(got, want)
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


SEQUENCE_STEPS = 16  # steps of the seeded random sequence a stateful model without test_sequences() gets


def default_sequences(result: BuildResult, n_steps: int = SEQUENCE_STEPS, seed: int = 0) -> list:
    """The sequences a program with state is verified on: the model file's test_sequences(),
    else one seeded random sequence of ``n_steps`` steps."""
    spec = result.spec
    seqs = getattr(spec, "test_sequences", None) if spec is not None else None
    if seqs:
        return [[tuple(to_numpy(x) for x in step) for step in seq] for seq in seqs]
    return [random_inputs(result.program, n_steps, seed=seed)]


def _module_steps(module, seq: list) -> list:
    """PyTorch running ``seq`` step by step on a fresh copy of ``module`` (its buffers as built)."""
    import copy

    import torch

    m = copy.deepcopy(module).eval()
    outs = []
    with torch.no_grad():
        for step in seq:
            out = m(*[torch.from_numpy(np.ascontiguousarray(x)) for x in step])
            outs.append([to_numpy(o) for o in (out if isinstance(out, (tuple, list)) else [out])])
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
                exact = identical_outputs(got, want)
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
                out = fns[name](*[torch.from_numpy(np.ascontiguousarray(a)) for a in x])
                outs = [] if out is None else (list(out) if isinstance(out, (tuple, list)) else [out])
                wants.append([to_numpy(o) for o in outs])
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


def run(model=None, *, board: str = "mps2-an505", pte_path=None, out=None, inputs=None, n_random: int | None = None,
        fuse: bool = True, timeout: float = 60.0, progress=None, quantize=None, io: str = "float32",
        calibration=None, max_inputs: int | None = None, backend: str = "auto", cmsis_nn_path=None,
        value_cache=None, upload: bool = False, frame_bytes: int | None = None,
        measure_stack: bool = True, kernels: str = "auto", cycles: bool = True,
        methods: list | None = None, ram_regions=None, arena_region: str | None = None) -> RunResult:
    """Builds, runs `inputs` on the emulator and compares. With measure_stack (default) the first image keeps
    the linker script's stack; the device's stack high-water mark after the runs decides the stack of the
    deployable image (builder.stack_reserve), which is relinked and verified again: the figures returned are
    the deployable image's. With ``cycles`` (default) the final session also counts instructions by
    class (a QEMU plugin) for estimated cycles (docs/cycles.md); without it, or when the plugin cannot
    be had, the estimate fields are None and ``cycles_unavailable`` says why. ``methods``: of a program
    with several, verify only these (names)."""
    result = build(model, board=board, pte_path=pte_path, out=out, fuse=fuse, quantize=quantize, io=io,
                   calibration=calibration, backend=backend, cmsis_nn_path=cmsis_nn_path, value_cache=value_cache,
                   upload=upload, frame_bytes=frame_bytes, kernels=kernels, ram_regions=ram_regions,
                   arena_region=arena_region)
    b = result.board
    if not b.is_qemu:
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
    elif inputs is None:
        inputs = default_sequences(result) if stateful else default_inputs(result, n_random, max_inputs)
    elif max_inputs is not None:
        inputs = inputs[:max_inputs]
    first_stack, c, classes, counter = _verify_on_qemu(b, result, inputs, timeout, progress, cycles)
    used = first_stack
    if measure_stack and c.verified and first_stack:
        from mcu_gen.firmware.builder import relink, stack_reserve

        relink(result, stack_reserve(first_stack), measured=first_stack)
        used, c, classes, counter = _verify_on_qemu(b, result, inputs, timeout, progress, cycles)
        reserved = result.report["stack"]["reserved_bytes"]
        if used is None or used >= reserved:
            raise RuntimeError(f"the stack overflowed its {reserved:,} B (measured {first_stack:,} B before): "
                               f"{result.out / 'firmware.elf'} is not safe to deploy")
        result.report["stack"].update(measured_bytes=used, measurement_build_bytes=first_stack)
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
        instructions_per_inference=max(c.counts) if c.counts else None,
        n_inferences=len(c.counts),
        reference=c.reference, out=str(result.out), outputs=c.outputs, instructions=c.counts,
        quantize=quantize, io=io if quantize else "float32", bit_exact=c.bit_exact,
        quant_max_abs_error=c.quant_max_abs_error, top1_agreement=c.top1_agreement,
        stack_used_bytes=used or None, stack_reserved_bytes=r["stack"]["reserved_bytes"],
        ram=dict((r.get("size") or {}).get("ram", {})), upload=bool(upload),
        quant_output_errors=c.quant_output_errors,
        n_sequences=len(inputs) if stateful else 0, reset_identical=c.reset_identical,
        state_bytes=sum(m.tensor(i).nbytes for _, m, i in result.program.all_states),
        **_cycle_fields(b, counter.reason, classes, c.counts),
        methods=c.methods,
    )


def _verify_on_qemu(b, result: BuildResult, inputs, timeout: float, progress, cycles: bool):
    """One QEMU session of check_link, with the cycle-counting plugin when it can be had:
    (the device's stack high-water mark, LinkCheck, ClassCounts per inference (None where none),
    CycleCounter). A QEMU that does not start with the plugin is started again without it (the
    counter's reason then says why)."""
    from mcu_gen.device.cycles import CycleCounter
    from mcu_gen.device.link import LinkError
    from mcu_gen.device.qemu import QemuSession

    if cycles:
        counter = CycleCounter.for_board(b, result.elf)
    else:
        counter = CycleCounter(b, result.elf, reason="not asked for (--no-cycles)")
    args = counter.qemu_args()
    session = QemuSession(b, result.elf, run_timeout=timeout, extra_args=args)
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
        session = QemuSession(b, result.elf, run_timeout=timeout)
        link = session.start()
    try:
        c = check_link(link, result, inputs, progress)
        stack = link.hello().stack_used
        link.exit(0)
    finally:
        session.close()
    classes = counter.per_inference(c.counts)
    counter.close()
    return stack, c, classes, counter


def _cycle_fields(b, reason: str, found: list, counts: list) -> dict:
    """RunResult's estimate fields from what the plugin counted per inference (`reason` when nothing)."""
    from mcu_gen.device.cycles import CyclesUnavailable, cycles_by_class, estimate

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
            "cycle_model": f"{b.core} (mcu_gen/device/cycles.py, docs/cycles.md)",
            "estimated_cycles": [e.cycles for e in ests], "instruction_classes": found[k].nonzero(),
            "estimated_cycles_by_class": cycles_by_class(found[k], b.core)}


