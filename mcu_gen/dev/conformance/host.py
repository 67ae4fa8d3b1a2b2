"""Run conformance cases through mcu-gen on the host: capture, lower, plan, write the .pte, and run
it on ONE native runner built once with every portable kernel (AddressSanitizer and UBSan, as the
host kernel tests), then compare with eager PyTorch (device/compare.verify_outputs: fp32 within
the verification tolerance, integers and bools exact, NaN/inf where PyTorch has them).

    runner = HostRunner()                 # builds (or reuses) the one binary
    result = runner.run(case)             # Result(status, detail, missing)

Statuses: ``correct``, ``incorrect`` (ran, wrong values / shape / dtype), ``missing`` (an operator
without a kernel: ``missing`` names the kernels), ``refused`` (mcu-gen's own clear error, e.g. a
data-dependent shape), ``crash`` (anything else: an internal Python error or the runner dying; a
bug by issue 24's rule 8).
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mcu_gen.errors import McuGenError

STATUSES = ("correct", "incorrect", "missing", "refused", "crash")
_NO_KERNEL = re.compile(r"(aten::[\w.]+|cortex_m::[\w.]+|mcu::[\w.]+) is not supported")
_NO_KERNEL_FOR = re.compile(r"no kernel for ([\w:.]+)")


@dataclass
class Result:
    case: str
    status: str
    detail: str = ""
    missing: list = field(default_factory=list)  # kernel / operator names without a kernel
    mode: str = ""  # int8 runs: "int8" (int8 kernels), "fp32 islands" (only quantize/dequantize are int8), "fp32"
    bit_exact: bool | None = None  # int8 runs: every output identical to the integer reference's

    def as_dict(self) -> dict:
        return {"case": self.case, "status": self.status, "detail": self.detail, "missing": self.missing,
                "mode": self.mode, "bit_exact": self.bit_exact}


def missing_from_message(text: str) -> list:
    """The operators an UnsupportedOperatorError names ('no kernel for X', else 'X is not supported')."""
    found = _NO_KERNEL_FOR.findall(text) or _NO_KERNEL.findall(text)
    return list(dict.fromkeys(found))


def compare(got: list, want: list) -> tuple[bool, str]:
    """(ok, why not) for runner outputs against eager outputs (torch tensors)."""
    from mcu_gen.device.compare import verify_outputs

    if len(got) != len(want):
        return False, f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        if tuple(np.shape(g)) != tuple(w.shape):
            return False, f"output {k}: shape {tuple(np.shape(g))}, expected {tuple(w.shape)}"
        if np.asarray(g).dtype != w.dtype:
            return False, f"output {k}: dtype {np.asarray(g).dtype}, expected {w.dtype}"
    err, tol, ok = verify_outputs(got, [w.numpy() for w in want])
    return ok, "" if ok else f"max abs error {err:.3g} > tolerance {tol:.3g} (or NaN/inf/integers differ)"


def lower_case(case, available: dict):
    """(Program, missing kernels) of a case: the fp32 path of `mcu-gen build` (export_model, fused)."""
    from mcu_gen.backends import kernels as kernel_registry
    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import spec_from_module
    from mcu_gen.plan import inplace_pass

    spec = spec_from_module(case.module, case.fresh_inputs(), name=case.op)
    program = export_model(spec, fuse=True)
    sel = kernel_registry.select(program.operators, available)
    if sel.missing:
        return program, list(sel.missing)
    inplace_pass.plan_memory(program)
    return program, []


CALIBRATION_SCALES = (1.0, 0.5, 0.75)  # the case's float inputs, and shrunk copies (same signs and domain)
_EDGE_OPS = ("cortex_m::quantize_per_tensor.out", "cortex_m::dequantize_per_tensor.out")


def calibration_of(case) -> list:
    """The calibration set of a case's int8 run: its own inputs, and copies with the float inputs scaled
    towards 0 (integer and bool inputs, indices and masks, as they are)."""
    return [tuple(x * s if x.is_floating_point() else x.clone() for x in case.inputs) for s in CALIBRATION_SCALES]


def lower_case_int8(case, available: dict):
    """(Program, missing kernels) of a float32 case quantized as `mcu-gen build --quantize int8` does it
    (export_quantized with float32 I/O, calibrated on calibration_of(case)), planned."""
    from mcu_gen.backends import kernels as kernel_registry
    from mcu_gen.capture.model_file import spec_from_module
    from mcu_gen.plan import inplace_pass
    from mcu_gen.quantize import export_quantized

    spec = spec_from_module(case.module, case.fresh_inputs(), calibration=calibration_of(case), name=case.op)
    program, _ = export_quantized(spec, io="float32", has_kernel=lambda op: op in available)
    sel = kernel_registry.select(program.operators, available)
    if sel.missing:
        return program, list(sel.missing)
    inplace_pass.plan_memory(program)
    return program, []


def _reads_int8(program, ins) -> bool:
    """An instruction that reads an int8 activation (a portable kernel run on int8 bytes: a pick, a
    comparison of codes, an embedding of an int8 table)."""
    from mcu_gen.program.ir import TensorValue

    return any(isinstance(program.values[a], TensorValue) and program.values[a].dtype == "int8"
               for a in ins.args[:-1] if isinstance(a, int) and 0 <= a < len(program.values))


def int8_mode(program) -> str:
    """"int8" when an int8 kernel computes something (a cortex_m:: operator, or a portable kernel on
    int8 values), "fp32 islands" when only the edges are int8."""
    from mcu_gen.reference import is_int8_op

    if any(ins.op not in _EDGE_OPS and (is_int8_op(ins.op) or _reads_int8(program, ins))
           for ins in program.instructions):
        return "int8"
    return "fp32 islands" if program.meta.get("fp32_fallback") else "fp32"


def _lsb_scale(program, value: int):
    """The quantization step behind output ``value``: its own (int8) or that of the dequantize writing it."""
    t = program.tensor(value)
    if t.dtype == "int8":
        return t.scale
    for ins in program.instructions:
        if ins.op == "cortex_m::dequantize_per_tensor.out" and ins.args[-1] == value:
            return program.tensor(ins.args[0]).scale
    return None


def compare_exact(program, got: list, want: list, eager: list = ()) -> tuple[bool, bool, str]:
    """(correct, bit-exact, why) for runner outputs against the integer reference's (numpy arrays). Every
    int8, integer, bool or dequantized output must be identical; a float output that an fp32 island computes
    and nothing quantizes (log1p(x), var(x): the quantizer leaves them in fp32) is within `mcu-gen run`'s
    fp32 tolerance of the reference, which runs it with torch, not the target's float32 kernels (correct,
    not bit-exact). The outputs' count, shapes and dtypes are also those of the ``eager`` outputs."""
    from mcu_gen.device.compare import verify_outputs

    if len(got) != len(want):
        return False, False, f"{len(got)} outputs, expected {len(want)}"
    for k, (g, e) in enumerate(zip(got, eager)):
        e = e.numpy()
        if tuple(np.shape(g)) != tuple(e.shape) or np.asarray(g).dtype != e.dtype:
            return False, False, (f"output {k}: {np.asarray(g).dtype} {list(np.shape(g))}, "
                                  f"PyTorch {e.dtype} {list(e.shape)}")
    exact, ok, why = True, True, []
    for k, (g, w, o) in enumerate(zip(got, want, program.outputs)):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype or g.size != w.size:
            return False, False, f"output {k}: {g.dtype} {list(g.shape)}, reference {w.dtype} {list(w.shape)}"
        g = g.reshape(w.shape)
        if g.tobytes() == w.tobytes() or np.array_equal(g, w, equal_nan=w.dtype.kind == "f"):
            continue
        exact = False
        scale = _lsb_scale(program, o)
        if w.dtype.kind == "f" and scale is None:  # computed in fp32
            err, tol, fine = verify_outputs([g], [w])
            ok = ok and fine
            why.append(f"output {k} (fp32, not quantized): max abs error {err:.3g} "
                       + ("within" if fine else "above") + f" the fp32 tolerance {tol:.3g}")
            continue
        ok = False
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        d = np.abs(g64 - w64)
        d = np.where(np.isnan(g64) | np.isnan(w64), np.inf, d)
        diff = float(d.max()) if d.size else 0.0
        why.append(f"output {k}: max difference {diff / scale:.3g} LSB" if scale else
                   f"output {k}: max abs difference {diff:.3g}")
    return ok, exact, "; ".join(why)


class HostRunner:
    """One native runner with every portable kernel (built once, cached by mcu_gen.firmware.host)."""

    def __init__(self, available: dict | None = None):
        from mcu_gen.backends import kernels as kernel_registry
        from mcu_gen.firmware import host

        self.available = kernel_registry.find_kernels() if available is None else available
        self.exe = host.build_runner(list(self.available.values()))

    def execute(self, program, inputs) -> list:
        """Run a planned one-arena program on the runner; its outputs as numpy arrays."""
        from mcu_gen.firmware.host import HostRunError, np_dtype
        from mcu_gen.program import pte

        if len(program.arena_sizes) > 1:
            raise HostRunError("the conformance runner has one arena")
        data = pte.write(program)
        with tempfile.TemporaryDirectory(prefix="mcu-conf-") as tmp:
            tmp = Path(tmp)
            (tmp / "program.pte").write_bytes(data)
            paths = []
            for k, (x, i) in enumerate(zip(inputs, program.inputs)):
                p = tmp / f"in_{k}.bin"
                t = program.tensor(i)
                arr = np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x, dtype=np_dtype(t.dtype))
                if t.dim_order and tuple(t.dim_order) != tuple(range(arr.ndim)):
                    arr = arr.transpose(t.dim_order)  # memory order (an int8 program's channels-last input)
                p.write_bytes(np.ascontiguousarray(arr).tobytes())
                paths.append(str(p))
            r = subprocess.run([str(self.exe), str(tmp / "program.pte"), str(max(program.arena_size, 16)), str(tmp),
                                *paths], capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise HostRunError(f"host runner failed ({r.returncode}): {r.stdout.strip()[-500:]} "
                                   f"{r.stderr.strip()[-1500:]}")
            outs = []
            for k, o in enumerate(program.outputs):
                t = program.tensor(o)
                raw = (tmp / f"out_{k}.bin").read_bytes()
                order = tuple(t.dim_order) if t.dim_order else tuple(range(len(t.shape)))
                stored = np.frombuffer(raw, dtype=np_dtype(t.dtype)).reshape([t.shape[d] for d in order])
                outs.append(stored.transpose(np.argsort(order)).copy())  # logical layout
            return outs

    def run(self, case, expected: list | None = None, quantize: str | None = None) -> Result:
        """Classify one case. ``expected``: what to compare with (default: the case's eager outputs).
        ``quantize="int8"``: a float32 case runs quantized (lower_case_int8) and must be bit-exact with
        the host integer reference (mcu_gen.reference.integer, what `mcu-gen run --quantize int8`
        compares the device with); other dtypes run in fp32 as without it."""
        from mcu_gen.capture.export import UnsupportedOperatorError
        from mcu_gen.firmware.host import HostRunError

        if quantize not in (None, "int8"):
            raise ValueError(f"quantize={quantize!r}: only int8")
        int8 = quantize == "int8" and case.dtype == "float32"
        want = case.expected if expected is None else expected
        mode = "" if quantize is None else "fp32"
        try:
            program, missing = (lower_case_int8 if int8 else lower_case)(case, self.available)
            if int8:
                mode = int8_mode(program)
            if missing:
                return Result(case.id, "missing", "no kernel for " + ", ".join(missing), missing, mode)
            got = self.execute(program, case.fresh_inputs())
            if int8 and expected is None:
                from mcu_gen.reference.inputs import quantize_inputs
                from mcu_gen.reference.integer import run_int8_reference

                inputs = [x.numpy() for x in case.fresh_inputs()]
                want = run_int8_reference(program, list(quantize_inputs(program, inputs)))
        except UnsupportedOperatorError as e:
            names = missing_from_message(str(e))
            return Result(case.id, "missing" if names else "refused", str(e).splitlines()[0], names, mode=mode)
        except HostRunError as e:
            status = "crash" if ("Sanitizer" in str(e) or "runtime error" in str(e)) else "refused"
            return Result(case.id, status, str(e)[:800], mode=mode)
        except McuGenError as e:
            return Result(case.id, "refused", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                          mode=mode)
        except subprocess.TimeoutExpired:
            return Result(case.id, "crash", "host runner timed out", mode=mode)
        except Exception as e:  # an internal error: must not reach a user
            import traceback

            where = traceback.extract_tb(e.__traceback__)[-1]
            return Result(case.id, "crash", f"{type(e).__name__}: {e} (at {Path(where.filename).name}:{where.lineno})"
                          [:800], mode=mode)
        if int8 and expected is None:
            ok, exact, why = compare_exact(program, got, want, case.expected)
            return Result(case.id, "correct" if ok else "incorrect", why, mode=mode, bit_exact=exact)
        ok, why = compare(got, want)
        return Result(case.id, "correct" if ok else "incorrect", why, mode=mode)
