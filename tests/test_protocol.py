"""Framing of the verify protocol (pure Python)."""
import struct
import zlib

import pytest

from mcu_gen.device.protocol import MAX_PAYLOAD, Error, Frame, FrameDecoder, HelloInfo, Msg, TensorInfo, crc32, encode_frame, error_name


def test_crc32_is_zlib_crc32():
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32(b"6789", crc32(b"12345")) == 0xCBF43926


def test_encode_exact_bytes():
    f = encode_frame(Msg.ECHO, 7, b"\x01\x02")
    body = bytes([0x0B, 7, 2, 0, 1, 2])
    assert f == b"\xa5\x5a" + body + struct.pack("<I", zlib.crc32(body))
    assert encode_frame(Msg.RUN, 0x1FF)[3] == 0xFF  # seq wraps to a byte
    with pytest.raises(ValueError):
        encode_frame(Msg.ECHO, 0, b"x" * (MAX_PAYLOAD + 1))


def test_decode_round_trip_byte_by_byte():
    frames = [encode_frame(Msg.WRITE_INPUT, i, bytes(range(i * 10 % 256)) * 3) for i in range(5)]
    d = FrameDecoder()
    got = []
    for byte in b"".join(frames):
        got += d.feed(bytes([byte]))
    assert [(f.type, f.seq, len(f.payload)) for f in got] == [(Msg.WRITE_INPUT, i, i * 10 % 256 * 3) for i in range(5)]
    assert d.discarded == 0 and d.bad_crc == 0


def test_resync_after_garbage():
    d = FrameDecoder()
    good = encode_frame(Msg.HELLO | 0x80, 3, b"\x00ok")
    got = d.feed(b"\xa5\xa5noise\x5a\xa5" + good + b"\xff" + good)
    assert got == [Frame(0x81, 3, b"\x00ok")] * 2
    assert d.discarded == len(b"\xa5\xa5noise\x5a\xa5") + 1


def test_bad_crc_rejected_and_next_frame_found():
    d = FrameDecoder()
    bad = bytearray(encode_frame(Msg.ECHO, 1, b"hello"))
    bad[8] ^= 0x20  # flip a payload bit
    good = encode_frame(Msg.ECHO, 2, b"world")
    assert d.feed(bytes(bad) + good) == [Frame(Msg.ECHO, 2, b"world")]
    assert d.bad_crc == 1


def test_impossible_length_rejected():
    d = FrameDecoder()
    huge = b"\xa5\x5a" + struct.pack("<BBH", 1, 1, MAX_PAYLOAD + 1)
    good = encode_frame(Msg.ECHO, 9, b"")
    assert d.feed(huge + good) == [Frame(Msg.ECHO, 9, b"")]
    assert d.bad_length == 1


def test_a_frame_split_across_reads_is_reassembled():
    d = FrameDecoder()
    f = encode_frame(Msg.ECHO, 4, b"x" * 100)
    assert d.feed(f[:3]) == []
    assert d.needed() == 3  # rest of the header
    assert d.feed(f[3:6]) == []
    assert d.needed() == len(f) - 6
    assert d.feed(f[6:]) == [Frame(Msg.ECHO, 4, b"x" * 100)]


def test_reply_bodies_parse():
    body = struct.pack("<HHQBBBBIIIB", 1, 1024, 0xAABB, 1, 0, 2, 1, 4096, 1000, 8192, 3) + b"v1x"
    h = HelloInfo.parse(body)
    assert (h.program_id, h.program_source, h.num_inputs, h.arena_used, h.firmware_version) == (0xAABB, "builtin", 2, 1000, "v1x")
    t = TensorInfo.parse(struct.pack("<BBBBIfi", 6, 4, 0, 0, 3072, 0.0, 0) + struct.pack("<4i", 1, 3, 16, 16) + bytes([0, 2, 3, 1]))
    assert (t.dtype, t.sizes, t.dim_order, t.nbytes, t.scale) == ("float32", (1, 3, 16, 16), (0, 2, 3, 1), 3072, None)


def test_error_names_match_error_h():
    from mcu_gen.paths import RUNTIME_CORE
    import re

    text = (RUNTIME_CORE / "include" / "mcu" / "error.h").read_text()
    in_header = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+) = (\d+),", text, re.M)}
    assert in_header == {e.name: e.value for e in Error}
    assert error_name(33) == "BadCrc" and error_name(250) == "Error(250)"
