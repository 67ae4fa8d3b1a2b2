"""A size limit for the native build caches ($MCU_GEN_CACHE/host: the host runners and the shared objects;
$MCU_GEN_CACHE/fuzz: the fuzz harnesses, their objects and seed programs). Without one they only grew: a run of
the test suite adds about 1,000 runners (2.2 MB each with the sanitizers) and this machine's host cache held
4.6 GB. Each cache is kept under MCU_GEN_CACHE_LIMIT_MB (default DEFAULT_LIMIT_MB, ccache's default size) by
removing entries now and then after a new build (``built``): first the least recently used runners (a runner
links again from the cached objects in about a second), then, only when the runners alone do not bring the
cache under its limit, the least recently used objects and seed sets (which take minutes to build again). A cache
hit marks its entry used (``mark_used``).

Entries used in the last MIN_AGE_SECONDS are never removed, even over the limit: a build or a run in another
process may be reading them (a runner found in the cache and not yet started, an object not yet linked). The
limit decides only what stays cached, never what a build produces: a removed entry is built again, the same
bytes. `mcu-gen cache` prints each cache's size and limit; `mcu-gen cache --trim` / `--clear` trims or empties
them."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from mcu_gen.errors import McuGenError

DEFAULT_LIMIT_MB = 5120
MIN_AGE_SECONDS = 3600
LIMIT_ENV = "MCU_GEN_CACHE_LIMIT_MB"
POOLS = ("objects", "seeds")  # folders whose children are the entries (the other children are entries themselves)


def limit_bytes() -> int:
    """MCU_GEN_CACHE_LIMIT_MB (a whole number of MiB, 0: keep only what is in use) in bytes, per cache."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return DEFAULT_LIMIT_MB << 20
    try:
        mb = int(text)
    except ValueError:
        mb = -1
    if mb < 0:
        raise McuGenError(f"{LIMIT_ENV}={text!r}: expected a whole number of MiB (0 or more), e.g. {DEFAULT_LIMIT_MB}")
    return mb << 20


def mark_used(path: Path) -> bool:
    """Marks a cache entry (a runner's folder, an object) as just used; False when it is gone (removed by a trim in
    another process: build it again)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class Entry:
    path: Path
    used: float  # mtime: when it was built or last used
    size: int  # bytes
    pooled: bool  # an object or a seed set (removed after every runner)


def _size(path: Path) -> int:
    """Bytes of a file, or of the files under a folder (0 for what another process removed meanwhile)."""
    try:
        if not path.is_dir() or path.is_symlink():
            return path.lstat().st_size
        total = 0
        with os.scandir(path) as it:
            for f in it:
                total += _size(Path(f.path)) if f.is_dir(follow_symlinks=False) else f.stat(follow_symlinks=False).st_size
        return total
    except FileNotFoundError:
        return 0


def entries(cache: Path) -> list:
    """The cache's entries in the order a trim removes them: the runners, then the objects and seed sets, each
    least recently used first (the path breaks ties: the same order every time)."""
    found = []
    if not cache.is_dir():
        return found
    for child in cache.iterdir():
        pooled = child.name in POOLS and child.is_dir()
        for p in (list(child.iterdir()) if pooled else [child]):
            try:
                used = p.lstat().st_mtime
            except FileNotFoundError:
                continue
            found.append(Entry(p, used, _size(p), pooled))
    return sorted(found, key=lambda e: (e.pooled, e.used, str(e.path)))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


TRIM_EVERY = 32  # new builds of a process between two trims (a trim reads every entry: about 0.2 s for 3,000)
_new_builds = {}  # cache folder -> this process's new builds since its last trim


def built(cache: Path) -> None:
    """Called after each new build into `cache`: trims it on this process's first new build and every
    TRIM_EVERY-th after (between two, the cache may pass its limit by the builds in between)."""
    n = _new_builds.get(cache, 0)
    _new_builds[cache] = n + 1
    if n % TRIM_EVERY == 0:
        trim(cache)


@dataclass(frozen=True)
class Trim:
    removed: int
    freed: int  # bytes
    kept: int  # entries
    size: int  # bytes left


def trim(cache: Path, limit: int | None = None, min_age: float = MIN_AGE_SECONDS, now: float | None = None) -> Trim:
    """Removes entries of `cache` in ``entries``' order until it holds at most `limit` bytes (default
    limit_bytes()), never one used in the last `min_age` seconds."""
    limit = limit_bytes() if limit is None else limit
    now = time.time() if now is None else now
    found = entries(cache)
    size = sum(e.size for e in found)
    removed = freed = 0
    for e in found:
        if size <= limit:
            break
        if now - e.used < min_age:
            continue
        _remove(e.path)
        size -= e.size
        freed += e.size
        removed += 1
    return Trim(removed, freed, len(found) - removed, size)
