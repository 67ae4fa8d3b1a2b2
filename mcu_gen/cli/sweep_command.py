"""`mcu-gen sweep`: models x boards x build options as independent tasks on Ray, a table, a Pareto picture
and the best build within RAM / flash limits.

Registered by mcu_gen/cli/__init__.py (add_sweep_command); the Python twin is mcu_gen.dev.sweep.sweep."""
from __future__ import annotations

import json
import sys

from mcu_gen.cli.options import CALIBRATION_METHODS


def grid_from_args(args) -> dict:
    """{option: [values]} from the sweep's flags (comma lists and repeats; --ram-regions: ';' or repeats)."""
    from mcu_gen.dev.sweep import split_values

    grid = {"quantize": split_values(args.quantize), "io": split_values(args.io),
            "backend": split_values(args.backend), "kernels": split_values(args.kernels),
            "calibration_method": split_values(args.calibration_method),
            "ram_regions": [None if v.lower() in ("default", "none") else v
                            for v in dict.fromkeys(s.strip() for a in (args.ram_regions or []) for s in a.split(";"))],
            "npu": split_values(args.npu)}
    bad = [v for v in grid["calibration_method"] if v not in CALIBRATION_METHODS]
    if bad:
        raise ValueError(f"--calibration-method {', '.join(bad)}: one of {', '.join(CALIBRATION_METHODS)}")
    return grid


def cmd_sweep(args) -> int:
    from mcu_gen.dev.sweep import sweep
    from mcu_gen.dev.sweep.grid import parse_bytes
    from mcu_gen.dev.sweep.table import text_table
    from mcu_gen.progress import for_cli

    grid = grid_from_args(args)
    limits = {"max_ram": parse_bytes(args.max_ram), "max_flash": parse_bytes(args.max_flash),
              "max_ms": args.max_ms, "max_error": args.max_error}
    bar = for_cli(args, "sweep tasks")

    def log(line):
        if not args.json:
            print(("\r\x1b[K" if bar.enabled else "") + line, file=sys.stderr, flush=True)

    boards = [b for a in (args.board or [["mps2-an505"]]) for b in a]
    s = sweep(args.model, boards, grid, out=args.out, cache_dir=args.cache, use_cache=not args.no_cache,
              address=args.address, num_cpus=args.num_cpus, n=args.n, timeout=args.timeout,
              limits={k: v for k, v in limits.items() if v is not None}, prefer=args.prefer,
              picture=not args.no_picture, log=log, progress=bar, verbose=getattr(args, "verbose", False))
    bar.done()
    if args.json:
        print(json.dumps({"rows": s.rows, "picks": [{"model": p["model"], "why": p["why"],
                                                     "command": p["row"]["command"] if p["row"] else None}
                                                    for p in s.picks], "files": s.files, "cached": s.cached,
                          "ran": s.ran, "seconds": round(s.seconds, 1)}, indent=2, default=str))
        return 0
    print(text_table(s.rows))
    for a, b in s.merged:
        print(f"  same build as {b}: {a}")
    where = (f"{s.ran} task(s) ran on Ray ({s.ray['address']}, {s.ray['cpus']:g} CPU(s))" if s.ran else
             "no task ran")
    print(f"{len(s.rows)} build(s): {s.cached} served from the cache, {where}; {s.seconds:.1f} s")
    for p in s.picks:
        if p["row"] is None:
            print(f"best {p['model']}: none: {p['why']}")
        else:
            print(f"best {p['model']}: {p['row']['command']}\n  why: {p['why']}")
    print(f"wrote {', '.join(s.files)}")
    return 0


def add_sweep_command(sub) -> None:
    s = sub.add_parser("sweep", help="build and verify models x boards x options as tasks on Ray (the sweep "
                                     "extra): table, Pareto picture, best build within limits")
    s.add_argument("--model", action="append", required=True, help="model file (repeatable)")
    s.add_argument("--board", action="append", type=lambda v: [b.strip() for b in v.split(",") if b.strip()],
                   help="board (repeatable or comma-separated; default mps2-an505)")
    lst = lambda v: v.split(",")  # noqa: E731
    s.add_argument("--quantize", action="append", type=lst, help="none,int8 (default none)")
    s.add_argument("--io", action="append", type=lst, help="float32,int8 (int8 builds)")
    s.add_argument("--backend", action="append", type=lst, help="auto,portable,cmsis-nn (int8 builds)")
    s.add_argument("--kernels", action="append", type=lst, help="auto,library,generated (int8 builds)")
    s.add_argument("--calibration-method", dest="calibration_method", action="append", type=lst,
                   help=",".join(CALIBRATION_METHODS) + " (int8 builds)")
    s.add_argument("--ram-regions", dest="ram_regions", action="append",
                   help="one grid value per flag (or ';'-separated), each as for build, e.g. "
                        "'dtcm=16K,sram=1M;default'")
    s.add_argument("--npu", action="append", type=lst, help="Ethos-U configs (boards with an NPU only)")
    s.add_argument("--max-ram", dest="max_ram", help="limit for the pick, e.g. 64K")
    s.add_argument("--max-flash", dest="max_flash", help="limit for the pick, e.g. 512K")
    s.add_argument("--max-ms", dest="max_ms", type=float, help="limit for the pick: estimated ms per inference")
    s.add_argument("--max-error", dest="max_error", type=float, help="limit for the pick: max abs error vs fp32")
    s.add_argument("--prefer", choices=["ms", "ram_bytes", "flash_bytes", "error_vs_fp32"], default="ms",
                   help="what the pick minimizes first (default ms)")
    s.add_argument("--out", default="mcu-gen-out/sweep", help="folder for sweep.csv/.json, pareto.png/.svg, builds/")
    s.add_argument("--cache", default=None, help="result cache (default $MCU_GEN_CACHE/sweep, ~/.cache/mcu-gen/sweep)")
    s.add_argument("--no-cache", dest="no_cache", action="store_true", help="run every task again (results are "
                                                                            "still stored)")
    s.add_argument("--address", default=None, help="Ray cluster (host:port or ray://host:10001; else $RAY_ADDRESS; "
                                                   "default: a local Ray on this machine's cores)")
    s.add_argument("--num-cpus", dest="num_cpus", type=int, default=None, help="local Ray's CPUs (default: all)")
    s.add_argument("-n", type=int, default=None, help="inputs per verification when the model has no test_inputs()")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds an inference may take")
    s.add_argument("--no-picture", dest="no_picture", action="store_true")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_sweep)
