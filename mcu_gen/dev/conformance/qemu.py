"""A conformance case on an emulated board: `mcu-gen run` semantics (build the firmware with exactly
the case's kernels, boot it in QEMU, infer over the serial protocol, compare with PyTorch)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from mcu_gen.dev.conformance.host import Result, missing_from_message
from mcu_gen.errors import McuGenError


def run_on_board(case, board: str = "mps2-an505", out: Path | None = None) -> Result:
    from mcu_gen.capture.export import UnsupportedOperatorError
    from mcu_gen.capture.model_file import spec_from_module
    from mcu_gen.device.runner import run

    with tempfile.TemporaryDirectory(prefix="mcu-conf-qemu-") as tmp:
        try:
            spec = spec_from_module(case.module, case.fresh_inputs(), None, [case.fresh_inputs()],
                                    case.op.replace(".", "_"))
            r = run(spec, board=board, out=Path(out or tmp) / "case")
        except UnsupportedOperatorError as e:
            names = missing_from_message(str(e))
            return Result(case.id, "missing" if names else "refused", str(e).splitlines()[0], names)
        except McuGenError as e:
            names = missing_from_message(str(e))
            if names and "no kernel" in str(e):
                return Result(case.id, "missing", str(e).splitlines()[0], names)
            return Result(case.id, "refused", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        except Exception as e:  # an internal error
            return Result(case.id, "crash", f"{type(e).__name__}: {e}"[:800])
    if r.verified:
        return Result(case.id, "correct")
    return Result(case.id, "incorrect", f"max abs error {r.max_abs_error:.3g} > {r.tolerance:.3g} on {board}")
