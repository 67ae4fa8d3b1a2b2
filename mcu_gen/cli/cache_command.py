"""`mcu-gen cache`: the native build caches' folders, sizes and limit (mcu_gen/firmware/cache_trim.py), and
trimming or emptying them; and the firmware builds' ccache folder (mcu_gen/firmware/toolchain.py: ccache_setup),
which ccache itself keeps under the same limit."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from mcu_gen.firmware.cache_trim import LIMIT_ENV, MIN_AGE_SECONDS, entries, limit_bytes, trim
from mcu_gen.firmware.toolchain import ccache_env
from mcu_gen.paths import cache_root

CACHES = ("host", "fuzz")


def cmd_cache(args) -> int:
    limit = limit_bytes()
    rows = []
    for name in CACHES:
        folder = cache_root() / name
        if args.clear or args.trim:  # the trim's own count of what is left: no second pass over the cache
            done = trim(folder, 0, 0) if args.clear else trim(folder, limit, MIN_AGE_SECONDS)
            left, size, removed, freed = done.kept, done.size, done.removed, done.freed
        else:
            found = entries(folder)
            left, size, removed, freed = len(found), sum(e.size for e in found), 0, 0
        rows.append({"cache": name, "folder": str(folder), "entries": left, "bytes": size, "limit_bytes": limit,
                     "removed": removed, "freed_bytes": freed})
    rows.append(ccache_row(args.clear, args.trim))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"limit per cache: {limit >> 20} MiB ({LIMIT_ENV}); entries used in the last {MIN_AGE_SECONDS // 60} min "
          f"are kept by --trim")
    for r in rows:
        line = f"{r['cache']:<6} {r['folder']}: {r['entries']:,} entries, {r['bytes'] / 2**20:,.1f} MiB"
        if args.clear or args.trim:
            line += f" (removed {r['removed']:,}, {r['freed_bytes'] / 2**20:,.1f} MiB)"
        print(line)
    return 0


def _files(folder: Path) -> list:
    return [p.stat().st_size for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []


def ccache_row(clear: bool, trim: bool) -> dict:
    """The firmware builds' ccache folder (toolchain.ccache_env): its files and bytes; --clear removes it, --trim has
    ccache clean it up to its limit."""
    env = ccache_env()
    folder = Path(env["CCACHE_DIR"])
    before = _files(folder)
    if clear:
        shutil.rmtree(folder, ignore_errors=True)
    elif trim and before and shutil.which("ccache"):
        subprocess.run([shutil.which("ccache"), "--cleanup"], env=env, capture_output=True, check=False)
    after = _files(folder)
    return {"cache": "ccache", "folder": str(folder), "entries": len(after), "bytes": sum(after),
            "limit_bytes": int(env["CCACHE_MAXSIZE"].rstrip("M")) << 20,
            "removed": max(len(before) - len(after), 0), "freed_bytes": max(sum(before) - sum(after), 0)}


def add_cache_command(sub) -> None:
    s = sub.add_parser("cache", help="the native build caches ($MCU_GEN_CACHE/host, /fuzz, /ccache): size and limit; "
                                    "--trim or --clear them")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--trim", action="store_true", help=f"remove the least recently used entries over the limit "
                                                      f"({LIMIT_ENV}, default 5120)")
    g.add_argument("--clear", action="store_true", help="remove every entry (they are built again when needed)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_cache)
