"""Fuzzing the runtime: build the libFuzzer harnesses, make seed corpora, run them.

Harnesses (runtime_core/tools/), each built with clang under libFuzzer,
AddressSanitizer and UBSan, each a `HARNESSES` key:

- ``program``: fuzz_program.cpp, the loader + verifier + every portable kernel;
- ``prepared``: the same with ``MCU_KERNEL_PREPARE=1`` and every value and
  instruction cached, plus the CMSIS-NN adapters (and the CMSIS-NN sources they
  reach) when CMSIS-NN is found (``$MCU_GEN_CMSIS_NN``);
- ``delegate``: ``MCU_MAX_DELEGATES=2``, a stub backend and the Ethos-U
  backend's load-time checks;
- ``protocol``: fuzz_protocol.cpp, the serial protocol server (frame parser,
  every request, program upload) on byte streams, with a builtin program.

Program harnesses mutate structure-aware (runtime_core/tools/fuzz_mutator.h).
Seeds are generated on the spot (no binaries in the repository): the
examples' .pte files, fp32 fused and unfused and int8 with float and int8 I/O,
a delegated program, and protocol sessions written with mcu_gen.protocol.
Used by tests/test_fuzz.py (bounded runs) and bench/fuzz_long.py (long ones).
"""
from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import shutil
import zlib
from pathlib import Path

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.firmware.cache_trim import mark_used
from mcu_gen.firmware.host import build_native, compile_object
from mcu_gen.errors import McuGenError
from mcu_gen.paths import EXAMPLES, PACKAGE, RUNTIME_CORE, cache_root

CACHE = cache_root() / "fuzz"
FLAGS = ["-std=c++17", "-g", "-O1", "-fno-exceptions", "-fno-rtti", "-fsanitize=fuzzer,address,undefined",
         "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
C_FLAGS = ["-std=c99", "-g", "-O1", "-fsanitize=fuzzer-no-link,address,undefined", "-fno-sanitize-recover=all",
           "-fno-omit-frame-pointer"]
SEED_EXAMPLES = ("mul_add", "mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder")
INT8_EXAMPLES = SEED_EXAMPLES[1:]  # the five with calibration data (mul_add has none)
HARNESSES = ("program", "prepared", "delegate", "protocol")
PREPARED_DEFINES = ["-DMCU_KERNEL_PREPARE=1", "-DMCU_VALUE_CACHE=1024", "-DMCU_INSTRUCTION_CACHE=256"]
PROTOCOL_BUILTIN = "mul_add"  # the protocol fuzzer's builtin program

class FuzzError(McuGenError, RuntimeError):
    pass


def find_clang() -> str | None:
    for name in ("clang++", "clang++-16", "clang++-15", "clang++-14"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def _clang() -> str:
    cxx = find_clang()
    if cxx is None:
        raise FuzzError("clang++ not found: install it with `sudo apt-get install clang` (Debian 12: clang-14)")
    return cxx


def _portable() -> list:
    return sorted(kernel_registry.find_kernels().values(), key=lambda k: k.op)


def _cmsis_nn_objects(root: Path, adapters) -> list:
    """CMSIS-NN's C sources that the adapters reach, compiled for the host (scalar code), each object cached
    by its preprocessed text like the runtime's (host.compile_object)."""
    from mcu_gen.backends.cmsis_nn import needed_sources

    clang = _clang().replace("clang++", "clang")
    includes = ["-I", str(root / "Include")]
    return [compile_object(clang, C_FLAGS, includes, f, root, CACHE, FuzzError)
            for f in needed_sources(root, [k.file for k in adapters])]


def build_fuzzer(harness: str = "program", state: bool = False, methods: bool = False) -> Path:
    """Build (or reuse, keyed by the sources' hash) one harness (a HARNESSES key); ``state``: the
    program harness with MCU_PROGRAM_HAS_STATE (state tensors and the mutable data segment);
    ``methods``: with MCU_PROGRAM_METHODS too (every execution plan verified, each method run)."""
    cxx = _clang()
    tools = RUNTIME_CORE / "tools"
    if harness == "program":
        flags = FLAGS + (["-DMCU_PROGRAM_HAS_STATE=1"] if state or methods else [])
        flags += ["-DMCU_PROGRAM_METHODS=1"] if methods else []
        return build_native(cxx, flags, tools / "fuzz_program.cpp", _portable(), CACHE, FuzzError)
    if harness == "protocol":  # ``methods``: the server of firmware for several methods (SELECT_METHOD)
        flags = FLAGS + (["-DMCU_PROGRAM_HAS_STATE=1", "-DMCU_PROGRAM_METHODS=1"] if methods else [])
        return build_native(cxx, flags, tools / "fuzz_protocol.cpp", _portable(), CACHE, FuzzError)
    if harness == "delegate":
        return build_native(cxx, FLAGS + ["-DMCU_MAX_DELEGATES=2"], tools / "fuzz_program.cpp", _portable(), CACHE,
                            FuzzError)
    if harness == "prepared":
        from mcu_gen.backends import cmsis_nn

        kernels = {k.op: k for k in _portable()}
        partners, objects, includes = [], [], []
        root, _how = cmsis_nn.locate(use_pack_manager=False)
        if root is not None:
            adapters = list(cmsis_nn.find_kernels().values())
            kernels.update({k.op: k for k in adapters})
            # the adapters' portable fallbacks (sources), and the CMSIS-NN code they call (objects)
            partners = cmsis_nn.portable_partners(adapters)
            objects = _cmsis_nn_objects(root, adapters)
            includes = [root / "Include"]
        table = sorted(kernels.values(), key=lambda k: k.op)
        return build_native(cxx, FLAGS + PREPARED_DEFINES, tools / "fuzz_program.cpp", table, CACHE, FuzzError,
                            extra_objects=objects, extra_includes=includes, extra_sources=partners)
    raise FuzzError(f"unknown harness {harness!r} (one of {', '.join(HARNESSES)})")


def prepared_has_cmsis_nn() -> bool:
    from mcu_gen.backends import cmsis_nn

    return cmsis_nn.locate(use_pack_manager=False)[0] is not None


def _source_key(examples) -> str:
    h = hashlib.sha256(repr(examples).encode())
    stages = ("capture", "quantize", "plan", "program")  # what makes a seed program
    files = [f for stage in stages for f in sorted((PACKAGE / stage).rglob("*.py"))]
    for path in files + sorted(EXAMPLES.rglob("*.py")):
        h.update(str(path).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def seed_programs(examples=SEED_EXAMPLES, int8: bool = True) -> dict:
    """name -> .pte bytes for the examples: fp32 fused and unfused, and (int8) quantized with
    float32 and with int8 I/O, planned as `mcu-gen build` plans them. Cached on disk by the hash
    of the examples and of the export and quantization sources (quantizing five models takes a while)."""
    cache = CACHE / "seeds" / _source_key((tuple(examples), int8))
    if cache.is_dir() and (cache / "done").exists() and mark_used(cache):
        return {p.stem: p.read_bytes() for p in sorted(cache.glob("*.pte"))}
    from mcu_gen.firmware.builder import load_program

    seeds = {}
    for name in examples:
        model = EXAMPLES / name / "model.py"
        for fuse in (True, False):
            _, data, _ = load_program(model, fuse=fuse)
            seeds[f"{name}{'' if fuse else '_unfused'}"] = data
        if int8 and name in INT8_EXAMPLES:
            for io in ("float32", "int8"):
                _, data, _ = load_program(model, quantize="int8", io=io)
                seeds[f"{name}_int8{'_io8' if io == 'int8' else ''}"] = data
    cache.mkdir(parents=True, exist_ok=True)
    for k, data in seeds.items():
        (cache / f"{k}.pte").write_bytes(data)
    (cache / "done").write_text("")
    return seeds


def delegate_seeds() -> dict:
    """Programs with delegate calls for the delegate harness: a stub-backend call between two
    portable kernels (blob in a segment after the constants)."""
    from mcu_gen.plan import inplace_pass
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program

    out = {}
    for k, blob in enumerate((b"\x01" * 40, bytes(range(200)))):
        p = Program()
        x = p.add_tensor((1, 8))
        h = p.add_tensor((1, 8))
        y = p.add_tensor((1, 8))
        z = p.add_tensor((1, 8))
        p.instructions.append(Instruction("aten::relu.out", [x, h, h]))
        p.instructions.append(Instruction(pte.DELEGATE_PREFIX + "0", [h, y]))
        p.instructions.append(Instruction("aten::relu.out", [y, z, z]))
        p.inputs, p.outputs = [x], [z]
        p.meta["delegates"] = [{"id": "StubBackend", "processed": blob, "compile_specs": [("k", b"v")]}]
        inplace_pass.plan_memory(p)
        out[f"stub_delegate_{k}"] = pte.write(p)
    return out


def _frame(msg: int, seq: int, payload: bytes = b"") -> bytes:
    body = struct.pack("<BBH", msg, seq & 0xFF, len(payload)) + payload
    return b"\xa5\x5a" + body + struct.pack("<I", zlib.crc32(body))


def upload_frames(program: bytes, seq: int = 0x40, chunk: int = 1000) -> list:
    """LOAD_PROGRAM_BEGIN, the chunks, LOAD_PROGRAM_END for `program`."""
    from mcu_gen.device.protocol import Msg

    frames = [_frame(Msg.LOAD_BEGIN, seq, struct.pack("<I", len(program)))]
    for off in range(0, len(program), chunk):
        frames.append(_frame(Msg.LOAD_CHUNK, seq + 1, struct.pack("<I", off) + program[off:off + chunk]))
    frames.append(_frame(Msg.LOAD_END, seq + 2, struct.pack("<I", zlib.crc32(program))))
    return frames


def protocol_sessions(builtin: bytes, uploads: dict) -> dict:
    """name -> byte stream: sessions a host would send (every request type, uploads of programs)."""
    from mcu_gen.device.protocol import Msg

    f = _frame
    info = [f(Msg.HELLO, 1, struct.pack("<H", 1)), f(Msg.TENSOR_INFO, 2, b"\x00\x00"), f(Msg.TENSOR_INFO, 3, b"\x01\x00")]
    run = [f(Msg.WRITE_INPUT, 4, b"\x00" + struct.pack("<I", 0) + b"\x00\x00\x80\x3f" * 16),
           f(Msg.WRITE_INPUT, 5, b"\x01" + struct.pack("<I", 0) + b"\x00\x00\x00\x40" * 16),
           f(Msg.RUN, 6), f(Msg.READ_OUTPUT, 7, b"\x00" + struct.pack("<IH", 0, 64))]
    debug = [f(Msg.RUN_PROFILED, 8, struct.pack("<H", 0)), f(Msg.RUN_RANGE, 9, struct.pack("<HH", 0, 1)),
             f(Msg.READ_VALUE, 10, struct.pack("<IIH", 0, 0, 16)), f(Msg.ECHO, 11, b"hello"),
             f(Msg.SPIN, 12, struct.pack("<I", 3))]
    out = {"requests": b"".join(info + run + debug + [f(Msg.EXIT, 13, struct.pack("<i", 0))]),
           "noise": b"\x00\xa5" + b"".join(info) + b"\x00\xa5\xa5\x5a\x01\x02\xff\xff" + b"".join(run)}
    for name, data in uploads.items():
        frames = upload_frames(data)
        out[f"upload_{name}"] = b"".join(info + frames + info + run + debug + [f(Msg.USE_BUILTIN, 14)] + info)
    # A chunk after a finished upload (issue 16, item 2), then a run of the uploaded program.
    first = next(iter(uploads.values()))
    out["chunk_after_end"] = b"".join(upload_frames(first) + [
        f(Msg.LOAD_CHUNK, 0x50, struct.pack("<I", 0) + b"\xff" * 64)] + run)
    return out


def protocol_corpus(directory: Path) -> list:
    """Writes the protocol sessions and the builtin program; returns the session paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    seeds = seed_programs()
    uploads = {k: seeds[k] for k in (PROTOCOL_BUILTIN, "mnist", "mnist_int8", "mnist_int8_io8")}
    paths = []
    for name, stream in protocol_sessions(seeds[PROTOCOL_BUILTIN], uploads).items():
        p = directory / f"{name}.bin"
        p.write_bytes(stream)
        paths.append(p)
    return paths


def protocol_env(work: Path) -> dict:
    """Environment of the protocol harness: its builtin program, written into `work`."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    builtin = work / "builtin.pte"
    builtin.write_bytes(seed_programs()[PROTOCOL_BUILTIN])
    return {"MCU_FUZZ_BUILTIN": str(builtin)}


def write_corpus(directory: Path, examples=SEED_EXAMPLES, harness: str = "program") -> list:
    """Writes the seeds of `harness` into `directory`; returns their paths."""
    if harness == "protocol":
        return protocol_corpus(directory)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    seeds = dict(seed_programs(examples))
    if harness == "delegate":
        seeds.update(delegate_seeds())
    paths = []
    for name, data in seeds.items():
        p = directory / f"{name}.pte"
        p.write_bytes(data)
        paths.append(p)
    return paths


def run_fuzzer(exe: Path, corpus: Path, seconds: int, artifacts: Path, jobs: int = 1, max_len: int | None = None,
               extra: tuple = (), env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs libFuzzer for `seconds`; crashing inputs land in `artifacts`."""
    artifacts = Path(artifacts)
    artifacts.mkdir(parents=True, exist_ok=True)
    cmd = [str(exe), str(corpus), f"-max_total_time={seconds}", f"-artifact_prefix={artifacts}/",
           "-timeout=20", "-rss_limit_mb=2048", "-print_final_stats=1"]
    if max_len:
        cmd.append(f"-max_len={max_len}")
    if jobs > 1:
        cmd += [f"-jobs={jobs}", f"-workers={jobs}"]
    cmd += list(extra)
    env = dict(os.environ, ASAN_OPTIONS="abort_on_error=0:detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1",
               **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds * 3 + 120)


def replay(exe: Path, data: bytes, tmp: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs the harness once on `data`; returncode 0 means no sanitizer report."""
    p = Path(tmp) / "input.pte"
    p.write_bytes(data)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1", **(env or {}))
    return subprocess.run([str(exe), str(p)], capture_output=True, text=True, env=env, timeout=120)


def replay_then_fuzz(exe: Path, seeds: dict, workdir: Path, seconds: int, env: dict | None = None) -> list:
    """Replays every seed ({name: bytes}) through the harness, then fuzzes from them for `seconds`.
    Returns the problems found (empty: every seed replayed cleanly and the fuzzer found nothing)."""
    workdir = Path(workdir)
    problems = []
    for name, data in seeds.items():
        r = replay(exe, data, workdir, env)
        if r.returncode != 0:
            problems.append(f"seed {name}:\n{r.stderr[-3000:]}")
    corpus = workdir / "corpus"
    corpus.mkdir(exist_ok=True)
    for name, data in seeds.items():
        (corpus / f"{name}.pte").write_bytes(data)
    artifacts = workdir / "artifacts"
    r = run_fuzzer(exe, corpus, seconds, artifacts, env=env)
    found = sorted(p.name for p in artifacts.iterdir())
    if r.returncode != 0 or found:
        problems.append(f"fuzzer found {found}:\n{r.stderr[-4000:]}")
    return problems
