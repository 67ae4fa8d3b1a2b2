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

    def as_dict(self) -> dict:
        return {"case": self.case, "status": self.status, "detail": self.detail, "missing": self.missing}


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
    from mcu_gen.plan import planner

    spec = spec_from_module(case.module, case.fresh_inputs(), name=case.op)
    program = export_model(spec, fuse=True)
    sel = kernel_registry.select(program.operators, available)
    if sel.missing:
        return program, list(sel.missing)
    planner.plan(program)
    return program, []


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
                arr = np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x,
                                 dtype=np_dtype(program.tensor(i).dtype), order="C")
                p.write_bytes(arr.tobytes())
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
                outs.append(np.frombuffer(raw, dtype=np_dtype(t.dtype)).reshape(t.shape).copy())
            return outs

    def run(self, case, expected: list | None = None) -> Result:
        """Classify one case. ``expected``: what to compare with (default: the case's eager outputs)."""
        from mcu_gen.capture.export import UnsupportedOperatorError
        from mcu_gen.firmware.host import HostRunError

        want = case.expected if expected is None else expected
        try:
            program, missing = lower_case(case, self.available)
            if missing:
                return Result(case.id, "missing", "no kernel for " + ", ".join(missing), missing)
            got = self.execute(program, case.fresh_inputs())
        except UnsupportedOperatorError as e:
            names = missing_from_message(str(e))
            return Result(case.id, "missing" if names else "refused", str(e).splitlines()[0], names)
        except HostRunError as e:
            status = "crash" if ("Sanitizer" in str(e) or "runtime error" in str(e)) else "refused"
            return Result(case.id, status, str(e)[:800])
        except McuGenError as e:
            return Result(case.id, "refused", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        except subprocess.TimeoutExpired:
            return Result(case.id, "crash", "host runner timed out")
        except Exception as e:  # an internal error: must not reach a user
            return Result(case.id, "crash", f"{type(e).__name__}: {e}"[:800])
        ok, why = compare(got, want)
        return Result(case.id, "correct" if ok else "incorrect", why)
