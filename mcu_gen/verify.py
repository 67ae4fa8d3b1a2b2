"""`mcu-gen verify` and `mcu-gen monitor`: the checks of `mcu-gen run`, against a real board.

    result = verify_port("/dev/ttyACM0", "mcu-gen-out/mnist-rp2350")
    result = verify_link(link, build)     # any Link: a serial port, QEMU's pty, a pipe

The build directory is what `mcu-gen build` wrote (model.pte, report.json);
the board must run the firmware built there (HELLO's program id is checked).
Expected outputs come from PyTorch when the model file is given (--model),
else from mcu-gen's reference interpreter of the program.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import pte
from .boards import get_board
from .builder import BuildResult
from .link import Link, LinkError
from .runner import DEFAULT_RANDOM_INPUTS, _to_numpy, expected_outputs, random_inputs, verify_outputs


@dataclass
class VerifyResult:
    board: str
    port: str
    verified: bool
    max_abs_error: float
    tolerance: float
    n_inferences: int
    reference: str
    ticks_unit: str
    ticks_per_inference: int | None
    firmware_version: str = ""
    ticks: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def load_build(build_dir, model=None) -> BuildResult:
    """A BuildResult from a build directory (model.pte + report.json); `model` adds the PyTorch module."""
    out = Path(build_dir)
    try:
        report = json.loads((out / "report.json").read_text())
        data = (out / "model.pte").read_bytes()
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{out} is not an mcu-gen build directory ({e.filename} is missing); "
                                "run `mcu-gen build ... --out DIR` first") from None
    spec = None
    if model is not None:
        from .model_file import load_model_file

        spec = load_model_file(model)
    elf = out / "firmware.elf"
    return BuildResult(out=out, board=get_board(report["board"]), program=pte.read(data), pte_bytes=data,
                       report=report, elf=elf if elf.is_file() else None, spec=spec)


def choose_inputs(result: BuildResult, n_random: int | None = None) -> list:
    test = getattr(result.spec, "test_inputs", None) if result.spec is not None else None
    if test and not n_random:
        return [tuple(_to_numpy(x) for x in t) for t in test]
    return random_inputs(result.program, n_random or DEFAULT_RANDOM_INPUTS)


def verify_link(link: Link, result: BuildResult, inputs=None, n_random: int | None = None, port: str = "",
                progress=None) -> VerifyResult:
    if result.report.get("quantize"):
        raise NotImplementedError("mcu-gen verify checks fp32 builds; int8 builds: use `mcu-gen run` on QEMU for now")
    hello = link.hello()
    if hello.program_id != result.program_id:
        raise LinkError(f"the board runs program {hello.program_id:016x}, the build in {result.out} made "
                        f"{result.program_id:016x}: flash {result.out}/firmware.uf2 (mcu-gen flash) first")
    inputs = choose_inputs(result, n_random) if inputs is None else inputs
    b = result.board
    worst_err, worst_tol, ok_all, ticks, reference = 0.0, 0.0, True, [], ""
    for k, one in enumerate(inputs):
        got, t = link.infer(list(one))
        want, reference = expected_outputs(result, one)
        err, tol, ok = verify_outputs(got, want)
        worst_err, worst_tol, ok_all = max(worst_err, err), max(worst_tol, tol), ok_all and ok
        ticks.append(b.instructions_from_ticks(t) if b.ticks_unit == "instructions" else t)
        if progress:
            progress(k + 1, len(inputs))
    return VerifyResult(board=b.name, port=port, verified=ok_all, max_abs_error=worst_err, tolerance=worst_tol,
                        n_inferences=len(inputs), reference=reference, ticks_unit=b.ticks_unit,
                        ticks_per_inference=max(ticks) if ticks else None, firmware_version=hello.firmware_version,
                        ticks=ticks)


def open_port(port: str, baud: int = 115200, settle: float = 0.0):
    """A pyserial port (a device path, a pty, or a URL such as socket://host:port)."""
    import serial

    try:
        p = serial.serial_for_url(port, baudrate=baud, timeout=0.05)
    except serial.SerialException as e:
        raise LinkError(f"cannot open {port}: {e}") from None
    if settle:
        time.sleep(settle)  # a board that resets on open (USB CDC) needs a moment
    p.reset_input_buffer()
    return p


def verify_port(port: str, build_dir, model=None, n_random: int | None = None, timeout: float = 60.0,
                baud: int | None = None, progress=None) -> VerifyResult:
    result = load_build(build_dir, model)
    ser = open_port(port, baud or result.board.baud or 115200)
    try:
        link = Link(ser, timeout=2.0, run_timeout=timeout, describe=lambda: f"board {result.board.name} on {port}")
        return verify_link(link, result, n_random=n_random, port=port, progress=progress)
    finally:
        ser.close()


def monitor(port: str, baud: int = 115200, seconds: float | None = None, out=sys.stdout) -> int:
    """Prints what the firmware says (HELLO: version, program, arena, tensors), then any bytes it sends."""
    ser = open_port(port, baud)
    try:
        link = Link(ser, timeout=2.0)
        info = link.hello()
        print(f"{port}: {info.firmware_version}, protocol v{info.protocol_version}, program {info.program_id:016x} "
              f"(source {info.program_source}, status {info.builtin_status}), arena {info.arena_used:,}/"
              f"{info.arena_size:,} B, upload buffer {info.upload_size:,} B", file=out)
        for kind, ts in (("input", info.inputs), ("output", info.outputs)):
            for i, t in enumerate(ts):
                print(f"  {kind} {i}: {t.dtype} {tuple(t.sizes)} ({t.nbytes:,} B)", file=out)
        out.flush()
        end = None if seconds is None else time.monotonic() + seconds
        while end is None or time.monotonic() < end:
            data = ser.read(256)
            if data:
                out.write(data.decode(errors="replace"))
                out.flush()
    except KeyboardInterrupt:
        pass
    finally:
        ser.close()
    return 0
