"""One connection to a device running a build: QEMU for an emulated board, a serial port otherwise.

    with open_device(result.board, result.elf, port=None) as link:   # QEMU (port=None)
        ensure_program(link, result)                                 # the device runs this build?
        link.infer(device_inputs(result)[0])

Used by `mcu-gen profile`, `mcu-gen debug` and the pytest plugin (mcu_gen/dev/pytest_plugin.py).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from mcu_gen.boards import Board
from mcu_gen.device.link import Link
from mcu_gen.device.protocol import Error
from mcu_gen.reference.inputs import in_distribution_inputs, to_numpy

DEFAULT_RANDOM_INPUTS = 3


@contextlib.contextmanager
def open_device(board: Board, elf=None, port: str | None = None, baud: int | None = None, timeout: float = 2.0,
                run_timeout: float = 60.0, qemu_args: tuple = ()):
    """Yields a Link: a fresh QEMU session (or native process, the host board) when `port` is None (boards
    that run here only; `qemu_args` added to QEMU's command line), else the serial port."""
    if port is None:
        if not board.runs_here:
            raise RuntimeError(f"board {board.name} has no emulator: flash the firmware and give its serial port "
                               f"(--port /dev/ttyACM0 / --mcu-port)")
        session = local_session(board, elf, timeout=timeout, run_timeout=run_timeout, extra_args=qemu_args)
        with session as link:
            yield link
            if session.returncode is None:
                link.exit(0)
        return
    import serial  # pyserial

    try:
        ser = serial.Serial(port, baudrate=baud or board.baud or 115200, timeout=0.05)
    except serial.SerialException as e:
        raise RuntimeError(f"cannot open {port} for board {board.name}: {e}") from None
    try:
        yield Link(ser, timeout=timeout, run_timeout=run_timeout, describe=lambda: f"board {board.name} on {port}")
    finally:
        ser.close()


def local_session(board: Board, elf, timeout: float = 2.0, run_timeout: float = 60.0, extra_args: tuple = ()):
    """The firmware `elf` of a board that runs here, not yet started: a QemuSession, or a NativeSession for the
    host board (whose firmware is an executable of this machine)."""
    if board.is_native:
        from mcu_gen.device.native import NativeSession

        return NativeSession(board, elf, timeout=timeout, run_timeout=run_timeout, extra_args=extra_args)
    from mcu_gen.device.qemu import QemuSession

    return QemuSession(board, elf, timeout=timeout, run_timeout=run_timeout, extra_args=extra_args)


def ensure_program(link: Link, result) -> None:
    """Makes the device run `result`'s program: already built in, or uploaded (LOAD_PROGRAM) when the
    firmware has room for it; otherwise says what to flash."""
    hello = link.hello()
    if hello.program_id == result.program_id:
        return
    if 0 < len(result.pte_bytes) <= hello.upload_size:
        code, detail = link.load_program(result.pte_bytes)
        if code == Error.Ok:
            link.hello()
            return
        why = f"the device rejected the uploaded program ({Error(code).name}, detail {detail})"
    else:
        why = "the firmware has no room to upload it"
    elf = Path(result.out) / "firmware.elf"
    raise RuntimeError(f"the device runs program {hello.program_id:016x}, the build made {result.program_id:016x}; "
                       f"{why}: flash {elf} (or firmware.uf2) to the board")


def count_from_ticks(board: Board, ticks: int) -> int:
    """Instructions under QEMU -icount, the board's tick unit (cycles) otherwise."""
    return board.instructions_from_ticks(ticks) if board.ticks_unit == "instructions" else int(ticks)


def count_unit(board: Board) -> str:
    return board.ticks_unit


def host_inputs(result, inputs=None, n: int | None = 1) -> list:
    """Input sets in the model's dtype (float for a quantized model with float I/O):
    the given ones, else the model file's test_inputs(), else seeded random ones."""
    if inputs is not None:
        sets = [inputs] if not isinstance(inputs, list) else inputs
        return [tuple(to_numpy(x) for x in (one if isinstance(one, (tuple, list)) else (one,))) for one in sets]
    from mcu_gen.device.session import default_inputs

    return default_inputs(result, n_random=n, max_inputs=n)


def device_inputs(result, one: tuple) -> list:
    """One input set as the device takes it (quantized on the host for int8 I/O)."""
    from mcu_gen.reference.inputs import quantize_inputs

    program = result.program
    return [np.asarray(x).astype(program.tensor(i).dtype)
            for x, i in zip(quantize_inputs(program, one), program.inputs)]


def value_from_bytes(program, index: int, raw: bytes) -> np.ndarray:
    """A tensor value's bytes (memory order, as READ_VALUE returns them) in logical layout."""
    t = program.tensor(index)
    order = tuple(t.dim_order) if t.dim_order else tuple(range(len(t.shape)))
    stored = np.frombuffer(raw, dtype=np.dtype(t.dtype)).reshape([t.shape[d] for d in order])
    return stored.transpose(np.argsort(order)).copy()


def default_inputs(result, n_random: int | None = None, max_inputs: int | None = None) -> list:
    """The model file's test_inputs(), else `n_random` in-distribution ones (described_inputs)."""
    return described_inputs(result, n_random, max_inputs)[0]


def described_inputs(result, n_random: int | None = None, max_inputs: int | None = None) -> tuple[list, str]:
    """(input sets, where they come from): the model file's test_inputs(), else `n_random` inputs like
    the calibration data (held-out calibration samples first; reference.inputs.in_distribution_inputs).
    Float inputs also for --io int8: the host quantizes them."""
    program, spec = result.program, result.spec
    test = getattr(spec, "test_inputs", None) if spec is not None else None
    if test:
        inputs = [tuple(to_numpy(x) for x in t) for t in test]
        inputs = inputs[:max_inputs] if max_inputs is not None else inputs
        return inputs, f"{len(inputs)} test input(s) from the model's test_inputs()"
    n = n_random or DEFAULT_RANDOM_INPUTS
    n = min(n, max_inputs) if max_inputs is not None else n
    return in_distribution_inputs(spec, program, n, bool(result.report.get("quantize")))
