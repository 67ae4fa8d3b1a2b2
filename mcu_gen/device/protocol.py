"""Host side of the verify protocol's framing (docs/protocol.md is the spec).

Frame: A5 5A | type u8 | seq u8 | len u16 LE | payload | crc32 LE (over type..payload).
Replies have type = request | 0x80 and a payload that starts with a status byte
(an mcu::Error); an error reply is exactly status u8 + detail i32.
"""
from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass, field

PROTOCOL_VERSION = 1
MAX_PAYLOAD = 1024
SYNC = b"\xa5\x5a"
REPLY_BIT = 0x80
HEADER = struct.Struct("<BBH")  # type, seq, len
OVERHEAD = len(SYNC) + HEADER.size + 4


class Msg(enum.IntEnum):
    HELLO = 0x01
    TENSOR_INFO = 0x02
    WRITE_INPUT = 0x03
    RUN = 0x04
    READ_OUTPUT = 0x05
    LOAD_BEGIN = 0x06
    LOAD_CHUNK = 0x07
    LOAD_END = 0x08
    USE_BUILTIN = 0x09
    EXIT = 0x0A
    ECHO = 0x0B
    SPIN = 0x0C
    RUN_PROFILED = 0x0D
    RUN_RANGE = 0x0E
    READ_VALUE = 0x0F
    RESET = 0x10
    SELECT_METHOD = 0x11


class Error(enum.IntEnum):
    """mcu::Error (runtime_core/include/mcu/error.h); the values are the wire values."""

    Ok = 0
    InvalidProgram = 1
    BadIdentifier = 2
    UnsupportedProgram = 3
    OperatorMissing = 4
    BadArgument = 5
    ArenaTooSmall = 6
    ConstantOutOfBounds = 7
    ArenaOutOfBounds = 8
    Misaligned = 9
    KernelFailed = 16
    NotLoaded = 17
    MethodMissing = 18
    BadFrame = 32
    BadCrc = 33
    BadRequest = 34
    BadIndex = 35
    BadLength = 36
    Timeout = 37
    ProtocolVersion = 38


def error_name(code: int) -> str:
    try:
        return Error(code).name
    except ValueError:
        return f"Error({code})"


def crc32(data: bytes, crc: int = 0) -> int:
    return zlib.crc32(data, crc) & 0xFFFFFFFF


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes

    @property
    def is_reply(self) -> bool:
        return bool(self.type & REPLY_BIT)


def encode_frame(type_: int, seq: int, payload: bytes = b"") -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds the protocol maximum {MAX_PAYLOAD}")
    body = HEADER.pack(type_ & 0xFF, seq & 0xFF, len(payload)) + bytes(payload)
    return SYNC + body + struct.pack("<I", crc32(body))


class FrameDecoder:
    """Incremental decoder: feed() bytes, get complete frames back.

    Bytes before a sync pair are discarded; a frame with a bad CRC or an
    impossible length is dropped and counted (bad_crc / bad_length), and the
    search for the next sync pair restarts one byte after the rejected one.
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.discarded = 0
        self.bad_crc = 0
        self.bad_length = 0
        self.stalled = 0  # frames given up on by resync()

    def feed(self, data: bytes) -> list[Frame]:
        self.buf += data
        frames = []
        while True:
            start = self.buf.find(SYNC)
            if start < 0:
                keep = 1 if self.buf[-1:] == SYNC[:1] else 0
                self.discarded += len(self.buf) - keep
                del self.buf[: len(self.buf) - keep]
                return frames
            self.discarded += start
            del self.buf[:start]
            if len(self.buf) < len(SYNC) + HEADER.size:
                return frames
            type_, seq, length = HEADER.unpack_from(self.buf, len(SYNC))
            if length > MAX_PAYLOAD:
                self.bad_length += 1
                del self.buf[:1]
                continue
            total = OVERHEAD + length
            if len(self.buf) < total:
                return frames
            body = bytes(self.buf[len(SYNC) : total - 4])
            (crc,) = struct.unpack_from("<I", self.buf, total - 4)
            if crc != crc32(body):
                self.bad_crc += 1
                del self.buf[:1]
                continue
            frames.append(Frame(type_, seq, body[HEADER.size :]))
            del self.buf[:total]

    def resync(self) -> list[Frame]:
        """Gives up on the frame in progress (a damaged length field can make it wait for bytes that
        belong to later frames): skips its sync pair and returns the complete frames already received."""
        start = self.buf.find(SYNC)
        if start < 0:
            return []
        self.discarded += start + 1
        self.stalled += 1
        del self.buf[: start + 1]
        return self.feed(b"")

    def needed(self) -> int:
        """How many more bytes the frame in progress needs at least (>= 1)."""
        start = self.buf.find(SYNC)
        if start < 0 or len(self.buf) - start < len(SYNC) + HEADER.size:
            return max(1, len(SYNC) + HEADER.size - (len(self.buf) - max(start, 0)))
        (length,) = struct.unpack_from("<H", self.buf, start + len(SYNC) + 2)
        return max(1, start + OVERHEAD + min(length, MAX_PAYLOAD) - len(self.buf))


# --- reply bodies -----------------------------------------------------------

DTYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64", 11: "bool"}
SOURCES = {0: "none", 1: "builtin", 2: "uploaded"}


@dataclass
class TensorInfo:
    dtype: str
    sizes: tuple
    dim_order: tuple
    nbytes: int
    scale: float | None = None  # int8 I/O of the builtin program (flags bit 0); float32 value
    zero_point: int | None = None

    @classmethod
    def parse(cls, body: bytes) -> "TensorInfo":
        dtype, dim, flags, _, nbytes, scale, zp = struct.unpack_from("<BBBBIfi", body, 0)
        off = 16
        sizes = struct.unpack_from(f"<{dim}i", body, off)
        dim_order = tuple(body[off + 4 * dim : off + 5 * dim])
        has_q = bool(flags & 1)
        return cls(DTYPES.get(dtype, f"dtype{dtype}"), tuple(sizes), dim_order, nbytes,
                   scale if has_q else None, zp if has_q else None)


@dataclass
class HelloInfo:
    protocol_version: int
    max_payload: int
    program_id: int
    program_source: str
    builtin_status: int
    num_inputs: int
    num_outputs: int
    arena_size: int
    arena_used: int
    upload_size: int
    firmware_version: str
    # Bytes of stack used since boot (the painted stack's high-water mark), after the version string;
    # None: a firmware that does not send it, 0: a board that does not measure it.
    stack_used: "int | None" = None
    inputs: list = field(default_factory=list)  # TensorInfo, filled by Link.hello()
    outputs: list = field(default_factory=list)
    # Firmware built for several methods (MCU_PROGRAM_METHODS) sends how many the program has and which
    # one is active after stack_used; others send nothing: one method, method 0.
    num_methods: int = 1
    active_method: int = 0
    multi_method_firmware: bool = False

    FIXED = struct.Struct("<HHQBBBBIIIB")

    @classmethod
    def parse(cls, body: bytes) -> "HelloInfo":
        (ver, maxp, pid, src, bstat, nin, nout, arena, used, upload, vlen) = cls.FIXED.unpack_from(body, 0)
        end = cls.FIXED.size + vlen
        version = body[cls.FIXED.size : end].decode("ascii", "replace")
        stack = struct.unpack_from("<I", body, end)[0] if len(body) >= end + 4 else None
        info = cls(ver, maxp, pid, SOURCES.get(src, str(src)), bstat, nin, nout, arena, used, upload, version, stack)
        if len(body) >= end + 6:
            info.num_methods, info.active_method = body[end + 4], body[end + 5]
            info.multi_method_firmware = True
        return info
