"""`mcu-gen cache`: the native build caches' folders, sizes and limit (mcu_gen/firmware/cache_trim.py), and
trimming or emptying them."""
from __future__ import annotations

import json

from mcu_gen.firmware.cache_trim import LIMIT_ENV, MIN_AGE_SECONDS, entries, limit_bytes, trim
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
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"limit per cache: {limit >> 20} MiB ({LIMIT_ENV}); entries used in the last {MIN_AGE_SECONDS // 60} min "
          f"are kept by --trim")
    for r in rows:
        line = f"{r['cache']:<5} {r['folder']}: {r['entries']:,} entries, {r['bytes'] / 2**20:,.1f} MiB"
        if args.clear or args.trim:
            line += f" (removed {r['removed']:,}, {r['freed_bytes'] / 2**20:,.1f} MiB)"
        print(line)
    return 0


def add_cache_command(sub) -> None:
    s = sub.add_parser("cache", help="the native build caches ($MCU_GEN_CACHE/host, /fuzz): size and limit; "
                                    "--trim or --clear them")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--trim", action="store_true", help=f"remove the least recently used entries over the limit "
                                                      f"({LIMIT_ENV}, default 5120)")
    g.add_argument("--clear", action="store_true", help="remove every entry (they are built again when needed)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_cache)
