"""One sweep task: a pure function of (model file bytes, board, options) -> a table row + artifacts.

It needs nothing from the machine that submitted it: the model file travels as bytes and is
written into a fresh temporary folder on the machine that runs the task (any machine with
mcu-gen, its cross-compilers and QEMU installed), and everything it makes comes back as bytes
(report.json, report.md, model.pte, firmware.elf). A failure is a row too, with its reason
(does not fit by N bytes, no kernel for an operator, a mismatch): the sweep goes on.

Modes: "run" (a QEMU board: build, boot, verify, cycle estimate: mcu_gen.run), "build" (a board
without emulator and no host offering it: firmware and sizes only), "hil" (a board attached to
the host the task landed on: build, flash, verify over its serial port, from MCU_GEN_BOARD_PORTS).
"""
from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

ARTIFACTS = ("report.json", "report.md", "model.pte", "firmware.elf", "firmware.uf2")
PORTS_ENV = "MCU_GEN_BOARD_PORTS"  # "rp2350=/dev/ttyACM0,rp2350-riscv=/dev/ttyACM1" on the host with the boards
MAX_REASON = 600


def board_ports(env: str | None = None) -> dict:
    """{board: serial port} from MCU_GEN_BOARD_PORTS on this host."""
    text = os.environ.get(PORTS_ENV, "") if env is None else env
    ports = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        board, sep, port = item.partition("=")
        if not sep or not port:
            raise ValueError(f"{PORTS_ENV}={text!r}: give board=port pairs, e.g. rp2350=/dev/ttyACM0")
        ports[board.strip()] = port.strip()
    return ports


def _reason(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    first = text.splitlines()[0] if type(e).__name__ in ("BuildError",) else text
    return first if len(first) <= MAX_REASON else first[:MAX_REASON] + " ..."


def _deterministic(e: BaseException) -> bool:
    """A failure the same inputs give again (cached like a result), not one of the machine (QEMU did
    not start, a timeout): those are run again next time."""
    from mcu_gen.errors import McuGenError

    name = type(e).__name__
    return isinstance(e, McuGenError) and name not in ("LinkError", "FlashError", "CyclesUnavailable")


def run_point(model_file: str, model_bytes: bytes, board: str, options: dict, mode: str = "run",
              n: int | None = None, timeout: float = 60.0) -> dict:
    """Builds (and with mode run / hil verifies) one point; returns {"row": {...}, "artifacts": {name: bytes}}.
    model_file is the file's name as given (its folder names the model, as for `mcu-gen build`)."""
    t0 = time.monotonic()
    row = {"host": socket.gethostname(), "pid": os.getpid(), "mode": mode, "started": time.time()}
    with tempfile.TemporaryDirectory(prefix="mcu-sweep-") as tmp:
        src = Path(model_file)
        folder = Path(tmp) / (src.parent.name or "model")
        folder.mkdir()
        path = folder / src.name
        path.write_bytes(model_bytes)
        out = Path(tmp) / "out"
        opts = dict(options)
        if opts.get("quantize") is None:
            opts.pop("quantize", None)
        try:
            row.update(_do(mode, str(path), board, opts, out, n, timeout))
        except Exception as e:  # a row with its reason; the sweep goes on
            reason = _reason(e).replace(str(path), model_file).replace(str(folder), str(src.parent))
            row.update(status="failed", reason=reason.replace(tmp, "<task folder>"), error_type=type(e).__name__,
                       deterministic=_deterministic(e))
        row["seconds"] = round(time.monotonic() - t0, 2)
        row["ended"] = time.time()
        artifacts = {a: (out / a).read_bytes() for a in ARTIFACTS if (out / a).is_file()}
    if "report.json" in artifacts and row.get("status") == "failed":
        _sizes_from_report(row, artifacts["report.json"])
    return {"row": row, "artifacts": artifacts}


def _sizes_from_report(row: dict, report_json: bytes) -> None:
    import json

    r = json.loads(report_json)
    for k in ("arena_bytes", "flash_bytes", "ram_bytes", "pte_bytes"):
        if r.get(k):
            row.setdefault(k, r[k])


def _do(mode, path, board, opts, out, n, timeout) -> dict:
    if mode == "run":
        from mcu_gen.device.runner import run

        r = run(path, board=board, out=out, n_random=n, timeout=timeout, **opts)
        return _row_from_run(r)
    from mcu_gen.firmware.builder import build

    ports = board_ports() if mode == "hil" else {}
    if mode == "hil" and board not in ports:
        raise RuntimeError(f"this host ({socket.gethostname()}) offers board:{board} but {PORTS_ENV} names no "
                           f"port for it (e.g. {PORTS_ENV}={board}=/dev/ttyACM0 before `ray start`)")
    b = build(path, board=board, out=out, **opts)
    rep = b.report
    row = {"arena_bytes": rep["arena_bytes"], "flash_bytes": rep["flash_bytes"], "ram_bytes": rep["ram_bytes"],
           "pte_bytes": rep["pte_bytes"], "stack_bytes": rep["stack"]["reserved_bytes"]}
    if mode == "build":
        return {**row, "status": "built", "reason": f"built only: {board} has no emulator and no Ray node "
                                                      f"offers board:{board} (docs/sweep.md)"}
    from mcu_gen.device.flash import flash
    from mcu_gen.device.verify import verify_port

    flash(b.board, out)
    time.sleep(2.0)  # the board reboots into the new image and its USB serial port comes back
    v = verify_port(ports[board], out, model=path, n_random=n, timeout=timeout)
    row.update(status="ok" if v.verified else "mismatch", verified=v.verified, bit_exact=v.bit_exact,
               port=ports[board], cycles=v.ticks_per_inference if v.ticks_unit == "cycles" else None,
               error_vs_fp32=v.quant_max_abs_error if opts.get("quantize") else v.max_abs_error)
    if row["cycles"] and b.board.clock_hz:
        row["ms"] = round(row["cycles"] * 1000 / b.board.clock_hz, 4)
    return row


def _row_from_run(r) -> dict:
    quantized = bool(r.quantize)
    return {
        "status": "ok" if r.verified else "mismatch",
        "reason": "" if r.verified else f"device outputs differ from the {r.reference}",
        "verified": r.verified, "bit_exact": r.bit_exact,
        "cycles": r.estimated_cycles_per_inference,
        "cycles_low": (r.estimated_cycles_range or [None, None])[0],
        "cycles_high": (r.estimated_cycles_range or [None, None])[1],
        "ms": None if r.estimated_ms_per_inference is None else round(r.estimated_ms_per_inference, 4),
        "clock_mhz": None if r.clock_hz is None else r.clock_hz / 1e6,
        "cycles_unavailable": r.cycles_unavailable,
        "instructions": r.instructions_per_inference,
        "ram_bytes": r.ram_bytes, "flash_bytes": r.flash_bytes, "arena_bytes": r.arena_bytes,
        "pte_bytes": r.pte_bytes, "stack_bytes": r.stack_reserved_bytes,
        # the device's outputs against the fp32 PyTorch model: fp32 builds their verification error,
        # int8 builds the quantization error of the dequantized outputs
        "error_vs_fp32": r.quant_max_abs_error if quantized else r.max_abs_error,
        "top1_agreement": r.top1_agreement,
        "n_inferences": r.n_inferences,
    }
