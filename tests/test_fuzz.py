"""The runtime under libFuzzer + ASan + UBSan (bounded runs), one harness each for
the program loader (portable kernels), the prepared build (MCU_KERNEL_PREPARE=1,
caches on, CMSIS-NN adapters when $MCU_GEN_CMSIS_NN is set), the delegate path
(stub backend) and the serial protocol server (mcu_gen/fuzz.py).

Seeds are generated here; any sanitizer report, crash or hang fails the test and
leaves the input in the artifacts directory; bench/fuzz_long.py runs the same
harnesses for longer. Inputs that once crashed the runtime are rebuilt below
(mcu_gen/crafted.py) and replayed as regression inputs.
"""
import re
import struct

import pytest

from mcu_gen.dev import crafted, fuzz
from mcu_gen.device.protocol import Error, FrameDecoder, Msg

FUZZ_SECONDS = 25


def _build(harness):
    if fuzz.find_clang() is None:
        pytest.skip("clang++ not found: fuzzing needs clang with libFuzzer (apt-get install clang)")
    return fuzz.build_fuzzer(harness)


@pytest.fixture(scope="module")
def fuzzer():
    return _build("program")


@pytest.fixture(scope="module")
def protocol_fuzzer():
    return _build("protocol")


@pytest.fixture(scope="module")
def seeds():
    return fuzz.seed_programs()


def test_seeds_cover_every_example_fp32_and_int8(seeds):
    assert len(fuzz.INT8_EXAMPLES) == 5
    for name in fuzz.SEED_EXAMPLES:
        for kind in ("", "_unfused") + (("_int8", "_int8_io8") if name in fuzz.INT8_EXAMPLES else ()):
            assert f"{name}{kind}" in seeds


# Inputs that crashed the runtime (issue 16), as (name, builder) pairs: each returns .pte bytes.
REGRESSIONS = [
    ("None value whose payload is not a table (item 1)", crafted.none_payload_not_a_table),
    ("chains vector that fails verification (item 6)", crafted.chains_vector_past_the_end),
    ("constant in split_with_sizes_copy's out list (item 3)", crafted.constant_in_out_list),
    ("constant segment over the flatbuffer (item 3)", crafted.segment_overlaps_flatbuffer),
    ("in-place depthwise window that overflows int32 (item 4)", crafted.depthwise_inplace_overflow),
    ("bool tensor bytes other than 0 and 1 (state fuzzer)", crafted.bool_bytes_not_0_or_1),
]


# Found by the prepared-kernel harness (CMSIS-NN adapters): replayed there.
PREPARED_REGRESSIONS = [
    ("quantized_linear bias that overflows CMSIS-NN's int32 sum", crafted.linear_bias_overflow),
]


@pytest.mark.parametrize("name,build", PREPARED_REGRESSIONS, ids=[n for n, _ in PREPARED_REGRESSIONS])
def test_prepared_regression_inputs_replay_cleanly(tmp_path, name, build):
    if not fuzz.prepared_has_cmsis_nn():
        pytest.skip("CMSIS-NN not found: set MCU_GEN_CMSIS_NN (the prepared harness runs portable kernels only)")
    r = fuzz.replay(_build("prepared"), build(), tmp_path)
    assert r.returncode == 0, f"{name}:\n{r.stderr[-3000:]}"


def test_regression_list_is_not_empty():
    assert len(REGRESSIONS) >= 5


def test_seed_programs_replay_cleanly(fuzzer, seeds, tmp_path):
    for name, data in seeds.items():
        r = fuzz.replay(fuzzer, data, tmp_path)
        assert r.returncode == 0, f"{name}:\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("name,build", REGRESSIONS, ids=[n for n, _ in REGRESSIONS])
def test_regression_inputs_replay_cleanly(fuzzer, tmp_path, name, build):
    r = fuzz.replay(fuzzer, build(), tmp_path)
    assert r.returncode == 0, f"{name}:\n{r.stderr[-3000:]}"


def _bounded_run(exe, corpus_paths, tmp_path, env=None):
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    for p in corpus_paths:
        (corpus / p.name).write_bytes(p.read_bytes())
    artifacts = tmp_path / "artifacts"
    r = fuzz.run_fuzzer(exe, corpus, FUZZ_SECONDS, artifacts, env=env)
    found = sorted(p.name for p in artifacts.iterdir())
    assert r.returncode == 0 and not found, f"fuzzer found {found}:\n{r.stderr[-4000:]}"
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", r.stderr)
    assert runs and int(runs.group(1)) > 1000, r.stderr[-2000:]


@pytest.mark.parametrize("harness", ["program", "prepared", "delegate"])
def test_bounded_fuzz_run_finds_nothing(harness, tmp_path):
    exe = _build(harness)
    paths = fuzz.write_corpus(tmp_path / "seeds", harness=harness)
    _bounded_run(exe, paths, tmp_path)


def test_bounded_protocol_fuzz_run_finds_nothing(protocol_fuzzer, tmp_path):
    paths = fuzz.write_corpus(tmp_path / "seeds", harness="protocol")
    _bounded_run(protocol_fuzzer, paths, tmp_path, env=fuzz.protocol_env(tmp_path / "work"))


# ---------------------------------------------------------------- the protocol server, replayed
def _session(protocol_fuzzer, tmp_path, stream: bytes):
    """Replays a byte stream into the real server; returns the replies (type, status) in order."""
    env = dict(fuzz.protocol_env(tmp_path / "work"), MCU_FUZZ_REPLIES=str(tmp_path / "replies.bin"))
    r = fuzz.replay(protocol_fuzzer, stream, tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    frames = FrameDecoder().feed((tmp_path / "replies.bin").read_bytes())
    return [(f.type & 0x7F, Error(f.payload[0])) for f in frames]


def test_protocol_seed_sessions_replay_cleanly(protocol_fuzzer, tmp_path):
    for p in fuzz.write_corpus(tmp_path / "seeds", harness="protocol"):
        replies = _session(protocol_fuzzer, tmp_path, p.read_bytes())
        assert replies, p.name


def test_no_chunk_after_a_finished_upload(protocol_fuzzer, tmp_path):
    """Item 2: after LOAD_PROGRAM_END made the upload the running program, a chunk that would
    rewrite it is refused (BadLength); the program still runs."""
    program = fuzz.seed_programs()["mnist"]
    f = fuzz._frame
    stream = b"".join(fuzz.upload_frames(program) + [
        f(Msg.LOAD_CHUNK, 0x50, struct.pack("<I", 0) + b"\xff" * 64),
        f(Msg.RUN, 0x51),
    ])
    replies = _session(protocol_fuzzer, tmp_path, stream)
    assert replies[-3] == (Msg.LOAD_END, Error.Ok), replies
    assert replies[-2] == (Msg.LOAD_CHUNK, Error.BadLength), replies
    assert replies[-1] == (Msg.RUN, Error.Ok), replies


def test_protocol_rejections_have_their_codes(protocol_fuzzer, tmp_path):
    """Every protocol error code from a byte stream: BadCrc, BadFrame, BadRequest, BadLength,
    BadIndex, ProtocolVersion, and an uploaded program's verifier code (the builtin stays)."""
    f = fuzz._frame
    bad_crc = bytearray(f(Msg.ECHO, 1, b"abc"))
    bad_crc[-1] ^= 1
    stream = b"".join([
        bytes(bad_crc),
        b"\xa5\x5a" + struct.pack("<BBH", Msg.ECHO, 2, 2000),
        f(0x7E, 3),
        f(Msg.TENSOR_INFO, 4, b"\x00"),
        f(Msg.TENSOR_INFO, 5, b"\x00\x09"),
        f(Msg.HELLO, 6, struct.pack("<H", 99)),
        *fuzz.upload_frames(crafted.none_payload_not_a_table(), seq=7)[:-1],
        f(Msg.LOAD_END, 9, struct.pack("<I", 0)),  # wrong CRC
        fuzz.upload_frames(crafted.none_payload_not_a_table(), seq=7)[-1],
        f(Msg.RUN, 10),
    ])
    replies = _session(protocol_fuzzer, tmp_path, stream)
    assert [code for _, code in replies] == [
        Error.BadCrc, Error.BadFrame, Error.BadRequest, Error.BadLength, Error.BadIndex, Error.ProtocolVersion,
        Error.Ok, Error.Ok, Error.BadCrc, Error.InvalidProgram, Error.Ok], replies
