"""Sweep results cached by content hash.

A task's key is the SHA-256 of what decides its result: the model file's bytes, the board, the
canonical options, the task mode and input count, mcu-gen's version, a hash of mcu-gen's own
sources (its Python code, runtime, kernels, boards and templates: a changed kernel is a new key),
and the versions of torch and of the cross-compiler. Same inputs, same tools -> the stored row and
artifacts are reused, without starting Ray. Failures of the inputs (does not fit, no kernel) are
cached too; failures of the machine (QEMU did not start, a timeout) are not.

Layout: <cache>/<key[:2]>/<key>/row.json and the artifacts (report.json, model.pte, firmware.elf, ...).
Default <cache>: $MCU_GEN_CACHE/sweep (MCU_GEN_CACHE defaults to ~/.cache/mcu-gen).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from mcu_gen.paths import cache_root

# Bump when the task's row format changes.
ROW_FORMAT = 1


def default_cache_dir() -> Path:
    return cache_root() / "sweep"


# Sources that do not decide a task's row: the command line, and the sweep's own driver (grid, table,
# picture); task.py and this file (ROW_FORMAT) do.
NOT_HASHED = ("cli/", "dev/sweep/__init__.py", "dev/sweep/grid.py", "dev/sweep/table.py")


@functools.lru_cache(maxsize=1)
def sources_hash() -> str:
    """SHA-256 over mcu-gen's Python sources and the runtime, kernels, boards and templates it compiles."""
    from mcu_gen import paths

    h = hashlib.sha256()
    roots = [paths.PACKAGE] + [paths.ROOT / d for d in ("runtime_core", "kernels_portable", "kernels_cmsis_nn",
                                                          "boards", "templates")]
    for root in roots:
        for f in sorted(root.rglob("*")):
            if not f.is_file() or "__pycache__" in f.parts or f.suffix in (".pyc", ".so") or "_data" in f.parts:
                continue
            rel = f.relative_to(root).as_posix()
            if root == paths.PACKAGE and rel.startswith(NOT_HASHED):
                continue
            h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def tool_versions() -> dict:
    import importlib.metadata as md
    import sys

    def first_line(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return None

    try:
        torch = md.version("torch")
    except md.PackageNotFoundError:
        torch = None
    return {"mcu_gen": sys.modules["mcu_gen"].__version__,  # the package this module is in (imported first)
            "sources": sources_hash(), "torch": torch,
            "arm-none-eabi-gcc": first_line(["arm-none-eabi-gcc", "--version"]),
            "qemu-system-arm": first_line(["qemu-system-arm", "--version"])}


def task_key(model_bytes: bytes, board: str, options: dict, mode: str, n: int | None) -> str:
    what = {"format": ROW_FORMAT, "model": hashlib.sha256(model_bytes).hexdigest(), "board": board,
            "options": dict(sorted(options.items())), "mode": mode, "n": n, "tools": tool_versions()}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


class Cache:
    def __init__(self, root: Path | None, enabled: bool = True):
        self.root = Path(root) if root else default_cache_dir()
        self.enabled = enabled

    def folder(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> dict | None:
        if not self.enabled:
            return None
        f = self.folder(key) / "row.json"
        try:
            return json.loads(f.read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, row: dict, artifacts: dict) -> Path:
        """Stores row and artifacts (written into a temporary folder, then renamed: a reader sees all or none)."""
        final = self.folder(key)
        tmp = final.with_name(f"{key}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, data in artifacts.items():
            (tmp / name).write_bytes(data)
        (tmp / "row.json").write_text(json.dumps(row, indent=1, sort_keys=True))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        return final
