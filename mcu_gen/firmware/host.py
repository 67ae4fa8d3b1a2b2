"""Run programs natively on the build machine ("host" board).

The native runner is runtime_core plus exactly the kernels a program uses,
compiled with g++ under AddressSanitizer and UBSan, so kernel tests are fast
and any out-of-bounds access fails loudly. Builds are cached by the hash of
their sources, so many tests with the same operators share one binary, and
each translation unit's object by its preprocessed text (compile_object), so
binaries with other kernels or runtime defines share the objects that are the same.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte
from mcu_gen.program.ir import Program, TensorValue
from mcu_gen.paths import RUNTIME_CORE, cache_root
from mcu_gen.errors import McuGenError
from mcu_gen.firmware.cache_trim import built, mark_used

CACHE = cache_root() / "host"
CXXFLAGS = ["-std=c++17", "-O1", "-g", "-fno-exceptions", "-fno-rtti", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all", "-Wall", "-Wextra"]


class HostRunError(McuGenError, RuntimeError):
    pass


# runtime_core's loader and executor, one job per file: value decoding and KernelContext, the verifying
# loader (docs/loader.md), execution. Every native build of the runtime compiles these (the runners here,
# the fuzzers, tests); a firmware project compiles all of runtime_core/src/*.cpp (these, the protocol
# server, CRC, PAL default and the Ethos-U delegate).
RUNTIME_SOURCES = ("program_view.cpp", "verifier.cpp", "executor.cpp")


def runtime_sources() -> list:
    return [RUNTIME_CORE / "src" / name for name in RUNTIME_SOURCES]


# Flags that only change the preprocessed text (which the object key hashes): left out of the key and the link.
PREPROCESSOR_ONLY = ("-D", "-U")
SOURCE_ROOT = RUNTIME_CORE.parent  # runtime_core/, kernels_portable/, ... (the checkout, or the wheel's _data)


def _runtime_hint(stderr: str) -> str:
    if "libclang_rt" not in stderr:  # libFuzzer/sanitizer runtimes: Debian's libclang-rt-<N>-dev
        return ""
    return ("\nclang's compiler-rt runtimes (libFuzzer, ASan, UBSan) are not installed: on Debian/Ubuntu "
            "install libclang-rt-<N>-dev for your clang <N> (scripts/setup.sh does)")


def compile_object(cxx: str, flags: list, includes: list, source: Path, build_dir: Path, cache: Path,
                   error=RuntimeError) -> Path:
    """One translation unit's object file (in cache/objects), shared by every native build whose
    preprocessed text of it is the same (the key: compiler, flags other than -D/-U, and that text with
    `build_dir`, the folder of the build's generated sources, named "<build>"). The kernels of the fuzz
    harnesses and the host runners differ in their runtime defines, not in what most kernels see, so
    each kernel compiles once per flag set instead of once per binary. The source tree's own folder is
    "<root>" in the key too, so every checkout and installed copy of the same sources shares the objects, and
    so is a source's own folder outside the tree ("<source>": a generated kernel in a temporary folder).
    Each such folder is mapped in the object too (-ffile-prefix-map: debug information and __FILE__ say
    "mcu-gen/...", "build/...", "source/..."); GCC's sanitizer locations in headers keep the folder of the checkout
    that compiled the object first (the same text: the same file and line in any checkout)."""
    pre = subprocess.run([cxx, *flags, *includes, "-E", str(source)], capture_output=True)
    if pre.returncode != 0:
        raise error(f"{Path(source).name} failed to preprocess:\n" + pre.stderr.decode(errors="replace")[-4000:])
    # (folder, its name in the key, its name in the object), replaced in this order
    folder = Path(source).parent  # a generated kernel's own folder (a test's temporary one, too)
    own = folder.is_absolute() and not folder.is_relative_to(SOURCE_ROOT) and len(folder.parts) > 2
    names = [(build_dir, "<build>", "build")] + ([(folder, "<source>", "source")] if own else [])
    names.append((SOURCE_ROOT, "<root>", "mcu-gen"))
    text = pre.stdout
    for path, placeholder, _ in names:
        text = text.replace(str(path).encode(), placeholder.encode())
    key = hashlib.sha256(cxx.encode() + b"\0" + " ".join(f for f in flags if not f.startswith(PREPROCESSOR_ONLY))
                         .encode() + b"\0" + text)
    obj = cache / "objects" / f"{key.hexdigest()[:24]}.o"
    if obj.exists() and mark_used(obj):
        return obj
    obj.parent.mkdir(parents=True, exist_ok=True)
    tmp = obj.with_name(f"{obj.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
    maps = [f"-ffile-prefix-map={path}={mapped}" for path, _, mapped in names]
    r = subprocess.run([cxx, *flags, *maps, *includes, "-c", str(source), "-o", str(tmp)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise error(f"{Path(source).name} failed to build:\n" + r.stderr[-4000:] + _runtime_hint(r.stderr))
    os.replace(tmp, obj)  # atomic: concurrent builds of the same object do not see a half-written file
    return obj


def build_native(cxx: str, flags: list, driver: Path, kernels, cache: Path, error=RuntimeError,
                 extra_objects=(), extra_includes=(), extra_sources=(), program=None) -> Path:
    """Compile runtime_core's executor, `driver` (a main) and exactly these kernels with the
    generated kernel table into a native binary; reused while the compiler, flags and every
    source and header hash the same. `extra_objects` (already compiled, e.g. CMSIS-NN's C
    sources) are linked in; `extra_includes` are more include folders; `extra_sources` more .cpp files (generated kernels).
    `program`: compile in only the dtypes its instructions use (mcu_selected_dtypes.h), as a firmware build does;
    without one, every dtype (a runner for any program of these operators)."""
    table = kernel_registry.kernel_table_source(kernels)
    order = [int(f.split("=", 1)[1]) for f in flags if f.startswith("-DMCU_OPERATOR_ORDER=")]
    if order and order[-1] > 0:  # the kernels of the first operators in flash (project.operator_fns_source)
        from mcu_gen.firmware.project import operator_fns_source

        table += operator_fns_source(list(kernels)[:order[-1]])
    dtypes = kernel_registry.selected_dtypes_source(kernels, program)
    sources = runtime_sources() + [driver] + [Path(p) for p in extra_sources]
    kernel_sources = list(dict.fromkeys(k.file for k in kernels))
    folders = sorted({k.file.parent for k in kernels})
    headers = sorted((RUNTIME_CORE / "include").rglob("*.h")) + sorted((RUNTIME_CORE / "src").glob("*.h"))
    for folder in folders:
        headers += sorted(folder.glob("*.h"))
    h = hashlib.sha256(table.encode() + dtypes.encode() + cxx.encode() + " ".join(flags).encode())
    # Drivers may include runtime sources and their own headers (the protocol fuzzer does).
    headers += sorted(Path(driver).parent.glob("*.h")) + sorted((RUNTIME_CORE / "src").glob("*.cpp"))
    headers += [Path(f) for f in extra_objects]
    for path in sources + kernel_sources + headers:
        h.update(str(path).encode())
        h.update(path.read_bytes())
    out = cache / h.hexdigest()[:20]
    exe = out / driver.stem
    if exe.exists() and mark_used(out):
        return exe
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel_table.cpp").write_text(table)
    (out / "mcu_selected_dtypes.h").write_text(dtypes)
    includes = ["-I", str(out), "-I", str(RUNTIME_CORE / "include"), "-I", str(RUNTIME_CORE / "src")]
    for folder in [*folders, *extra_includes]:
        includes += ["-I", str(folder)]
    units = [*sources, *kernel_sources, out / "kernel_table.cpp"]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        objects = list(pool.map(lambda src: compile_object(cxx, flags, includes, src, out, cache, error), units))
    link_flags = [f for f in flags if not f.startswith(PREPROCESSOR_ONLY)]
    tmp = out / f"{driver.stem}.{os.getpid()}"
    cmd = [cxx, *link_flags, *map(str, objects), *map(str, extra_objects), "-o", str(tmp), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise error(f"{driver.stem} failed to link:\n" + r.stderr[-4000:] + _runtime_hint(r.stderr))
    os.replace(tmp, exe)  # atomic: concurrent builds of the same key do not see a half-written binary
    built(cache)  # now and then: the least recently used runners and objects over MCU_GEN_CACHE_LIMIT_MB
    return exe


def build_runner(kernels, arena_regions: int = 1, program=None, defines: dict | None = None) -> Path:
    """Build (or reuse) a native runner with these kernels; returns its path. With arena_regions > 1 the
    runtime takes that many arenas (MCU_ARENA_REGIONS) and the runner's ARENA_BYTES is "n1,n2,...".
    With a program, only the dtypes it uses are compiled in (as on the device), else all. `defines`: more
    runtime configuration (e.g. the selective loader's MCU_VALUE_KINDS, docs/loader.md)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise HostRunError("no host C++ compiler: install g++ (Debian package g++)")
    flags = CXXFLAGS + ([f"-DMCU_ARENA_REGIONS={arena_regions}"] if arena_regions > 1 else [])
    flags += [f"-D{k}={v}" for k, v in (defines or {}).items()]
    return build_native(cxx, flags, RUNTIME_CORE / "tools" / "host_runner.cpp", kernels, CACHE, HostRunError,
                        program=program)


def np_dtype(dtype: str):
    return np.bool_ if dtype == "bool" else np.dtype(dtype)


def run_pte(data: bytes, inputs, kernels, arena_size, outputs_meta, program=None) -> list:
    """Run .pte bytes with the given kernels. outputs_meta: list of TensorValue. arena_size: bytes of the
    arena, or a list of them, one per planned buffer (memory ids 1, 2, ...: a runner with that many arenas)."""
    sizes = list(arena_size) if isinstance(arena_size, (list, tuple)) else [arena_size]
    exe = build_runner(kernels, arena_regions=len(sizes), program=program)
    arena_size = ",".join(str(max(n, 16)) for n in sizes)
    with tempfile.TemporaryDirectory(prefix="mcu-host-") as tmp:
        tmp = Path(tmp)
        (tmp / "program.pte").write_bytes(data)
        paths = []
        for i, x in enumerate(inputs):
            p = tmp / f"in_{i}.bin"
            p.write_bytes(np.asarray(x, order="C").tobytes())
            paths.append(str(p))
        r = subprocess.run([str(exe), str(tmp / "program.pte"), str(arena_size), str(tmp), *paths],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise HostRunError(f"host runner failed ({r.returncode}): {r.stdout.strip()} {r.stderr[-3000:]}")
        outs = []
        for i, t in enumerate(outputs_meta):
            raw = (tmp / f"out_{i}.bin").read_bytes()
            outs.append(np.frombuffer(raw, dtype=np_dtype(t.dtype)).reshape(t.shape).copy())
        return outs


def run_on_host(program: Program, inputs, available=None) -> list:
    """Plan (if needed), serialize and run a program natively; returns the outputs."""
    if any(isinstance(v, TensorValue) and not v.is_constant and v.offset is None for v in program.values):
        inplace_pass.plan_memory(program)
    sel = kernel_registry.select(program.operators, available)
    if sel.missing:
        raise HostRunError(f"no kernel for: {', '.join(sel.missing)}")
    for x, i in zip(inputs, program.inputs):
        t = program.tensor(i)
        if tuple(np.shape(x)) != t.shape:
            raise HostRunError(f"input {i}: shape {np.shape(x)} but the program expects {t.shape}")
    inputs = [np.asarray(x, dtype=np_dtype(program.tensor(i).dtype)) for x, i in zip(inputs, program.inputs)]
    data = pte.write(program)
    sizes = program.arena_sizes
    return run_pte(data, inputs, sel.kernels, sizes if len(sizes) > 1 else max(program.arena_size, 16),
                   [program.tensor(o) for o in program.outputs], program=program)
