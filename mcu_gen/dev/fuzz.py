"""Fuzzing the program loader: build the libFuzzer harness, make a seed corpus, run it.

The harness (runtime_core/tools/fuzz_program.cpp) is the executor plus every
portable kernel, built with clang under libFuzzer, AddressSanitizer and UBSan.
Seeds are the .pte files mcu-gen writes for the examples, generated on the
spot (no binaries in the repository). Used by tests/test_fuzz.py (a bounded
run) and bench/fuzz_long.py (a long one).
"""
from __future__ import annotations

import os
import subprocess
import shutil
from pathlib import Path

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.firmware.host import build_native
from mcu_gen.paths import RUNTIME_CORE
from mcu_gen.errors import McuGenError

CACHE = Path(os.environ.get("MCU_GEN_CACHE", Path.home() / ".cache" / "mcu-gen")) / "fuzz"
FLAGS = ["-std=c++17", "-g", "-O1", "-fno-exceptions", "-fno-rtti", "-fsanitize=fuzzer,address,undefined",
         "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
SEED_EXAMPLES = ("mul_add", "mnist", "kws_dscnn")


class FuzzError(McuGenError, RuntimeError):
    pass


def find_clang() -> str | None:
    for name in ("clang++", "clang++-16", "clang++-15", "clang++-14"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def build_fuzzer(state: bool = False) -> Path:
    """Build (or reuse, keyed by the sources' hash) the fuzz_program binary; ``state``: with
    MCU_PROGRAM_HAS_STATE (the loader's state tensors and mutable data segment, reset at load)."""
    cxx = find_clang()
    if cxx is None:
        raise FuzzError("clang++ not found: install it with `sudo apt-get install clang` (Debian 12: clang-14)")
    kernels = sorted(kernel_registry.find_kernels().values(), key=lambda k: k.op)
    flags = FLAGS + (["-DMCU_PROGRAM_HAS_STATE=1"] if state else [])
    return build_native(cxx, flags, RUNTIME_CORE / "tools" / "fuzz_program.cpp", kernels, CACHE, FuzzError)


def seed_programs(examples=SEED_EXAMPLES) -> dict:
    """name -> .pte bytes for the examples (planned, fused, as `mcu-gen build` writes them)."""
    from mcu_gen.plan import planner
    from mcu_gen.program import pte
    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.paths import ROOT

    seeds = {}
    for name in examples:
        spec = load_model_file(ROOT / "examples" / name / "model.py")
        for fuse in (True, False):
            program = export_model(spec, fuse=fuse)
            planner.plan(program)
            seeds[f"{name}{'' if fuse else '_unfused'}"] = pte.write(program)
    return seeds


def write_corpus(directory: Path, examples=SEED_EXAMPLES) -> list:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in seed_programs(examples).items():
        p = directory / f"{name}.pte"
        p.write_bytes(data)
        paths.append(p)
    return paths


def run_fuzzer(exe: Path, corpus: Path, seconds: int, artifacts: Path, jobs: int = 1, max_len: int | None = None,
               extra: tuple = ()) -> subprocess.CompletedProcess:
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
    env = dict(os.environ, ASAN_OPTIONS="abort_on_error=0:detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds * 3 + 120)


def replay(exe: Path, data: bytes, tmp: Path) -> subprocess.CompletedProcess:
    """Runs the harness once on `data`; returncode 0 means no sanitizer report."""
    p = Path(tmp) / "input.pte"
    p.write_bytes(data)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    return subprocess.run([str(exe), str(p)], capture_output=True, text=True, env=env, timeout=120)
