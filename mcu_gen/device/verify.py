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

from mcu_gen.program import pte
from mcu_gen.boards import get_board
from mcu_gen.firmware.builder import BuildResult
from mcu_gen.device.link import Link, LinkError
from mcu_gen.device.runner import check_link, default_sequences
from mcu_gen.device.session import default_inputs
from mcu_gen.plan.views import read_program


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
    bit_exact: bool | None = None  # int8 builds: identical to the host integer reference
    quant_max_abs_error: float | None = None
    top1_agreement: float | None = None

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
        from mcu_gen.capture.model_file import load_model_file

        spec = load_model_file(model)
    elf = out / "firmware.elf"
    program = read_program(data)
    # The .pte does not carry quantization parameters; report.json has them for int8 I/O.
    for kind, indices in (("inputs", program.inputs), ("outputs", program.outputs)):
        for row, i in zip(report.get(kind, []), indices):
            if "scale" in row:
                program.tensor(i).scale, program.tensor(i).zero_point = row["scale"], row["zero_point"]
    return BuildResult(out=out, board=get_board(report["board"]), program=program, pte_bytes=data,
                       report=report, elf=elf if elf.is_file() else None, spec=spec)


def verify_link(link: Link, result: BuildResult, inputs=None, n_random: int | None = None, port: str = "",
                progress=None) -> VerifyResult:
    """The checks of `mcu-gen run` (fp32 within tolerance, int8 bit-exact) against the device behind `link`."""
    if inputs is None:
        inputs = default_sequences(result) if result.program.states else default_inputs(result, n_random)
    try:
        c = check_link(link, result, inputs, progress)
    except RuntimeError as e:
        if isinstance(e, LinkError):
            raise
        raise LinkError(str(e)) from None
    b = result.board
    return VerifyResult(board=b.name, port=port, verified=c.verified, max_abs_error=c.max_abs_error,
                        tolerance=c.tolerance, n_inferences=len(c.counts), reference=c.reference,
                        ticks_unit=b.ticks_unit, ticks_per_inference=max(c.counts) if c.counts else None,
                        firmware_version=c.firmware_version, ticks=c.counts, bit_exact=c.bit_exact,
                        quant_max_abs_error=c.quant_max_abs_error, top1_agreement=c.top1_agreement)


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
              f"{info.arena_size:,} B, upload buffer {info.upload_size:,} B"
              + (f", stack used {info.stack_used:,} B" if info.stack_used else ""), file=out)
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
