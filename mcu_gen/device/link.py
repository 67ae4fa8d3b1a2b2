"""Host side of the verify protocol: requests, retries, timeouts, chunked transfers.

    link = Link(serial.Serial(port, timeout=1), timeout=2.0)
    info = link.hello()
    outputs, ticks = link.infer([x])

`port` is anything with pyserial's interface: write(bytes), read(n) that
returns at most n bytes after `port.timeout` seconds. Every read has a
deadline; a dead or silent link raises LinkError, never hangs.
"""
from __future__ import annotations

import os
import select
import struct
import time
from typing import Callable, Optional

import numpy as np

from mcu_gen.device.protocol import MAX_PAYLOAD, PROTOCOL_VERSION, Error, FrameDecoder, HelloInfo, Msg, TensorInfo, encode_frame, error_name, crc32
from mcu_gen.errors import McuGenError

POLL_S = 0.05  # port read timeout: how often a blocked read re-checks its deadline
CHUNK = MAX_PAYLOAD - 8  # data bytes per WRITE_INPUT / READ_OUTPUT / LOAD_CHUNK frame (header: index, offset, length)
# at most; a device whose frames are smaller (HELLO's max_payload) gets max_payload - 8 (Link.chunk).

NUMPY_DTYPES = {
    "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64, "bool": np.bool_,
}


class LinkError(McuGenError, RuntimeError):
    """The device did not answer (dead, silent or garbled link) or speaks another protocol version."""


class LinkTimeout(LinkError):
    """No usable reply within the deadline, after every retry (the link may be noisy, stalled or dead)."""


class DeviceError(McuGenError, RuntimeError):
    """The device answered with an error status (an mcu::Error code)."""

    def __init__(self, msg: int, code: int, detail: int, where: str = ""):
        self.msg, self.code, self.detail = msg, code, detail
        name = msg.name if isinstance(msg, Msg) else f"request 0x{msg:02x}"
        super().__init__(f"{name} failed on the device: {error_name(code)} (code {code}, detail {detail})"
                         + (f": {where}" if where else ""))

    def at_instruction(self, program) -> "DeviceError":
        """This error naming the instruction a failed RUN stopped at (its detail), with the user's line."""
        if self.msg != Msg.RUN or not 0 <= self.detail < len(program.instructions):
            return self
        ins = program.instructions[self.detail]
        where = f"instruction {self.detail}, {ins.op}" + (f" ({ins.source})" if ins.source else "")
        if self.code == Error.KernelFailed:
            where += (": its kernel refused the arguments (a shape or dtype it does not take, or input values outside "
                      "what the operator accepts, such as indices or offsets out of range)")
        return DeviceError(self.msg, self.code, self.detail, where)


class PipePort:
    """pyserial-like port over two file descriptors (a native host-board firmware's stdin/stdout)."""

    def __init__(self, read_fd: int, write_fd: int, timeout: float = 1.0):
        self.read_fd, self.write_fd, self.timeout = read_fd, write_fd, timeout

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            n = os.write(self.write_fd, view)
            view = view[n:]
        return len(data)

    def read(self, n: int) -> bytes:
        out = bytearray()
        end = time.monotonic() + (self.timeout or 0)
        while len(out) < n:
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                break
            chunk = os.read(self.read_fd, n - len(out))
            if not chunk:
                raise OSError("link closed by the device (end of file)")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


class Link:
    def __init__(self, port, timeout: float = 2.0, retries: int = 3, run_timeout: float = 60.0,
                 describe: Optional[Callable[[], str]] = None):
        self.port = port
        self.timeout = timeout
        self.retries = retries
        self.run_timeout = run_timeout
        self.describe = describe  # extra context for LinkError messages (board, device log)
        self.info: Optional[HelloInfo] = None
        self.max_payload: Optional[int] = None  # the device's, from its first HELLO reply
        self.last_error_detail = 0
        self._seq = 0
        self._decoder = FrameDecoder()
        # Set once: on a pyserial port every timeout change is a tcsetattr() call.
        self.port.timeout = POLL_S

    # --- transport ------------------------------------------------------------
    def _context(self) -> str:
        extra = self.describe() if self.describe else ""
        return f"\n{extra}" if extra else ""

    def _read_reply(self, seq: int, deadline: float):
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                # Maybe a damaged length holds a frame in progress: look for a reply behind it.
                for frame in self._decoder.resync():
                    if frame.is_reply and frame.seq == seq and frame.payload:
                        return frame
                return None
            try:
                data = self.port.read(self._decoder.needed())
            except Exception as e:  # serial.SerialException, OSError: the other end is gone
                raise LinkError(f"link failed while waiting for a reply: {e}{self._context()}") from e
            for frame in self._decoder.feed(data):
                if frame.is_reply and frame.seq == seq and frame.payload:
                    return frame

    def request(self, msg: Msg, payload: bytes = b"", timeout: Optional[float] = None,
                retries: Optional[int] = None, during: Optional[Callable[[], None]] = None) -> bytes:
        """Sends one request (resending the same seq on timeout or a transport error reply);
        returns the reply body after the status byte, raises DeviceError or LinkError.
        ``during``: host work to do once, after the request is sent and before its reply is awaited
        (the link trickles the bytes into the device meanwhile; the reply's deadline starts after it)."""
        self._seq = (self._seq + 1) & 0xFF
        seq = self._seq
        frame = encode_frame(msg, seq, payload)
        timeout = self.timeout if timeout is None else timeout
        attempts = 1 + (self.retries if retries is None else retries)
        problem = f"no reply within {timeout:g} s"
        for _ in range(attempts):
            try:
                self.port.write(frame)
            except Exception as e:
                raise LinkError(f"link failed while sending {getattr(msg, 'name', msg)}: {e}{self._context()}") from e
            if during is not None:
                during, work = None, during
                work()
            reply = self._read_reply(seq, time.monotonic() + timeout)
            if reply is None:
                problem = f"no reply within {timeout:g} s"
                continue
            status = reply.payload[0]
            if status == Error.Ok:
                return reply.payload[1:]
            detail = struct.unpack_from("<i", reply.payload, 1)[0] if len(reply.payload) >= 5 else 0
            if status in (Error.BadFrame, Error.BadCrc) and not (msg == Msg.LOAD_END and detail == 1):
                problem = f"device reported {error_name(status)} (frame damaged in transit)"
                continue
            if status == Error.ProtocolVersion:
                raise LinkError(f"protocol version mismatch: host speaks {PROTOCOL_VERSION}, "
                                f"device speaks {detail}{self._context()}")
            raise DeviceError(msg, status, detail)
        hint = ("the link damages frames: check the cable, baud rate and ground" if problem.startswith("device reported")
                else f"is the device running and speaking protocol v{PROTOCOL_VERSION}?")
        raise LinkTimeout(f"{getattr(msg, 'name', msg)}: {problem}, after {attempts} attempts; {hint}"
                          f"{self._noise()}{self._context()}")

    def _noise(self) -> str:
        d = self._decoder
        if not (d.bad_crc or d.bad_length or d.stalled or d.discarded):
            return ""
        return (f" (the link is noisy: {d.bad_crc} damaged frame(s), {d.bad_length + d.stalled} damaged length(s), "
                f"{d.discarded} byte(s) of noise received so far)")

    # --- requests ---------------------------------------------------------------
    def hello(self) -> HelloInfo:
        info = HelloInfo.parse(self.request(Msg.HELLO, struct.pack("<H", PROTOCOL_VERSION)))
        if info.protocol_version != PROTOCOL_VERSION:
            raise LinkError(f"protocol version mismatch: host speaks {PROTOCOL_VERSION}, "
                            f"device speaks {info.protocol_version}{self._context()}")
        self.max_payload = min(MAX_PAYLOAD, info.max_payload)
        info.inputs = [self.tensor_info(False, i) for i in range(info.num_inputs)]
        info.outputs = [self.tensor_info(True, i) for i in range(info.num_outputs)]
        self.info = info
        return info

    def chunk(self) -> int:
        """Data bytes per WRITE_INPUT / READ_OUTPUT / LOAD_CHUNK / READ_VALUE frame: the device's
        frame payload (HELLO) minus the request header (asks HELLO first if it is not known yet)."""
        if self.max_payload is None:
            self.hello()
        return self.max_payload - 8

    def tensor_info(self, is_output: bool, index: int) -> TensorInfo:
        return TensorInfo.parse(self.request(Msg.TENSOR_INFO, bytes([int(is_output), index])))

    def echo(self, data: bytes) -> bytes:
        return self.request(Msg.ECHO, data)

    def write_input(self, index: int, data: bytes, during: Optional[Callable[[], None]] = None) -> None:
        data, chunk = bytes(data), self.chunk()
        for off in range(0, len(data), chunk):
            self.request(Msg.WRITE_INPUT, struct.pack("<BI", index, off) + data[off : off + chunk], during=during)
            during = None

    def run(self) -> tuple[int, int]:
        """Executes the program once: (status, ticks of execute() only). status is an
        mcu::Error code (0 = Ok); on failure ticks is 0 and last_error_detail is set."""
        try:
            body = self.request(Msg.RUN, timeout=self.run_timeout, retries=0)
        except DeviceError as e:
            self.last_error_detail = e.detail
            return e.code, 0
        self.last_error_detail = 0
        return Error.Ok, struct.unpack("<Q", body[:8])[0]

    def read_output(self, index: int, nbytes: Optional[int] = None) -> bytes:
        if nbytes is None:
            if self.info is None:
                self.hello()
            nbytes = self.info.outputs[index].nbytes
        out, chunk = bytearray(), self.chunk()
        for off in range(0, nbytes, chunk):
            n = min(chunk, nbytes - off)
            out += self.request(Msg.READ_OUTPUT, struct.pack("<BIH", index, off, n))
        return bytes(out)

    def spin(self, n: int) -> int:
        """Ticks the device takes for a loop of exactly 2n instructions (calibration)."""
        return struct.unpack("<Q", self.request(Msg.SPIN, struct.pack("<I", n), timeout=self.run_timeout)[:8])[0]

    def load_program(self, program: bytes) -> tuple[int, int]:
        """Uploads and verifies a program: (error code, detail); (0, 0) when it is now active.
        On failure the previously active program keeps running."""
        program, chunk = bytes(program), self.chunk()
        try:
            self.request(Msg.LOAD_BEGIN, struct.pack("<I", len(program)))
            for off in range(0, len(program), chunk):
                self.request(Msg.LOAD_CHUNK, struct.pack("<I", off) + program[off : off + chunk])
            self.request(Msg.LOAD_END, struct.pack("<I", crc32(program)), timeout=self.run_timeout)
        except DeviceError as e:
            return e.code, e.detail
        self.info = None
        return Error.Ok, 0

    def use_builtin(self) -> None:
        self.request(Msg.USE_BUILTIN)
        self.info = None

    def exit(self, code: int) -> None:
        """Asks the device to stop (QEMU exits with `code`). A reply lost to the exit is not an error."""
        try:
            self.request(Msg.EXIT, struct.pack("<i", code), retries=0)
        except LinkError:
            pass

    # --- profiling and debugging (docs/protocol.md: RUN_PROFILED, RUN_RANGE, READ_VALUE) ----
    def _unsupported(self, msg: Msg, e: DeviceError):
        if e.code == Error.BadRequest and e.detail == msg:
            return LinkError(f"the firmware does not answer {msg.name}: a deployable image (`mcu-gen build` without "
                             f"--upload) has no profiling and debugging requests; flash the firmware `mcu-gen "
                             f"profile` / `mcu-gen debug` build (build(..., debug=True)){self._context()}")
        return e

    def run_profiled(self) -> tuple[list, int]:
        """Runs the program once with a tick read after every instruction:
        (ticks per instruction, ticks of the whole profiled run). Longer programs
        than one reply window are run again for the next window."""
        ticks, total, first = [], 0, 0
        while True:
            try:
                body = self.request(Msg.RUN_PROFILED, struct.pack("<H", first), timeout=self.run_timeout, retries=0)
            except DeviceError as e:
                raise self._unsupported(Msg.RUN_PROFILED, e) from None
            count, got_first, window, run_total = struct.unpack_from("<IHHQ", body, 0)
            ticks += struct.unpack_from(f"<{window}I", body, 16)
            total = run_total if first == 0 else total
            first += window
            if first >= count or window == 0:
                return ticks, total

    def run_range(self, begin: int, end: int) -> int:
        """Executes instructions [begin, end) only; returns their ticks."""
        try:
            body = self.request(Msg.RUN_RANGE, struct.pack("<HH", begin, end), timeout=self.run_timeout, retries=0)
        except DeviceError as e:
            raise self._unsupported(Msg.RUN_RANGE, e) from None
        return struct.unpack("<Q", body[:8])[0]

    def reset(self) -> None:
        """RESET: the active program's state tensors back to their initial values (a program
        with state; firmware without state support answers BadRequest)."""
        try:
            self.request(Msg.RESET)
        except DeviceError as e:
            if e.code == Error.BadRequest and e.detail == Msg.RESET:
                raise LinkError("the firmware does not know RESET: it was built for a program without state "
                                f"(rebuild it for this program){self._context()}") from None
            raise

    def select_method(self, name: str) -> tuple[int, int]:
        """SELECT_METHOD: RUN, TENSOR_INFO, WRITE_INPUT and READ_OUTPUT address method `name` from now on
        (the arena, and the state in it, are left as they are). Returns (its index, ticks of the switch).
        A name the program lacks raises LinkError naming it; firmware for one method raises LinkError too."""
        try:
            body = self.request(Msg.SELECT_METHOD, name.encode())
        except DeviceError as e:
            if e.code == Error.BadRequest and e.detail == Msg.SELECT_METHOD:
                raise LinkError(f"the firmware does not know SELECT_METHOD: it was built for a program with one "
                                f"method (rebuild it for a program with several){self._context()}") from None
            if e.code == Error.MethodMissing:
                raise LinkError(f"the program on the device has no method {name!r} (it has {e.detail} "
                                f"method(s)){self._context()}") from None
            raise
        self.info = None  # its inputs and outputs are another method's: HELLO again
        return body[0], struct.unpack_from("<Q", body, 2)[0]

    def read_value(self, index: int, nbytes: int) -> bytes:
        """The bytes (memory order) of any tensor value of the active program: arena or constant."""
        out, chunk = bytearray(), self.chunk()
        for off in range(0, nbytes, chunk):
            n = min(chunk, nbytes - off)
            try:
                out += self.request(Msg.READ_VALUE, struct.pack("<IIH", index, off, n))
            except DeviceError as e:
                raise self._unsupported(Msg.READ_VALUE, e) from None
        return bytes(out)

    def write_inputs(self, inputs: list, during: Optional[Callable[[], None]] = None) -> None:
        """Writes every input (logical layout; channels-last tensors are permuted here); ``during`` as in
        request(), with the first frame."""
        if self.info is None:
            self.hello()
        info = self.info
        if len(inputs) != len(info.inputs):
            raise ValueError(f"the program takes {len(info.inputs)} inputs, got {len(inputs)}")
        for i, (x, t) in enumerate(zip(inputs, info.inputs)):
            arr = np.asarray(x, dtype=NUMPY_DTYPES[t.dtype])
            if tuple(arr.shape) != tuple(t.sizes):
                raise ValueError(f"input {i}: shape {tuple(arr.shape)} != program's {tuple(t.sizes)}")
            if t.dim_order and tuple(t.dim_order) != tuple(range(len(t.dim_order))):
                arr = arr.transpose(t.dim_order)
            self.write_input(i, np.asarray(arr, order="C").tobytes(), during=during)
            during = None

    # --- whole inferences -------------------------------------------------------
    def infer(self, inputs: list, rerun: bool = True, during: Optional[Callable[[], None]] = None
              ) -> tuple[list, int]:
        """Writes every input, runs once, reads every output: (outputs as numpy arrays, ticks).
        Arrays are in logical (PyTorch) layout; channels-last tensors are permuted here.
        ``rerun=False`` (programs with state, where a second run would advance the state):
        a lost RUN request or reply raises instead of running again. ``during``: host work done once
        while the first input frame travels (request()); `mcu-gen eval` computes the host's outputs there."""
        # RUN is not resent on its own: a run may overwrite its inputs (the plan reuses their memory),
        # so after a lost RUN request or reply the inputs are written again and the program rerun.
        for attempt in range(1 + self.retries):
            self.write_inputs(inputs, during=during)
            during = None
            try:
                status, ticks = self.run()
                break
            except LinkTimeout:
                if attempt == self.retries or not rerun:
                    raise
        info = self.info
        if status != Error.Ok:
            raise DeviceError(Msg.RUN, status, self.last_error_detail)
        outputs = []
        for i, t in enumerate(info.outputs):
            raw = self.read_output(i, t.nbytes)
            order = tuple(t.dim_order) or tuple(range(len(t.sizes)))
            stored = np.frombuffer(raw, dtype=NUMPY_DTYPES[t.dtype]).reshape([t.sizes[d] for d in order])
            outputs.append(stored.transpose(np.argsort(order)).copy())
        return outputs, ticks
