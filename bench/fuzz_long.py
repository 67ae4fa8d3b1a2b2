"""Fuzz the runtime for longer than the tests do, one harness after the other.

    python bench/fuzz_long.py [--minutes 10] [--harness program,prepared,delegate,protocol] [--jobs 1]

Harnesses and seeds: mcu_gen/fuzz.py (the loader with the portable kernels, the
prepared build, the delegate build, the protocol server). Each harness keeps its
corpus (mcu-gen-out/fuzz/<harness>/corpus) so later runs continue where this one
stopped; crashing inputs go to mcu-gen-out/fuzz/<harness>/artifacts. Prints the
executions per harness. Turn each crash into a regression input (mcu_gen/crafted.py,
tests/test_fuzz.py) and fix the runtime.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.dev import fuzz  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0, help="per harness")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--harness", default=",".join(fuzz.HARNESSES))
    ap.add_argument("--out", default=str(ROOT / "mcu-gen-out" / "fuzz"))
    args = ap.parse_args()
    failed = []
    for harness in args.harness.split(","):
        exe = fuzz.build_fuzzer(harness)
        base = Path(args.out) / harness
        corpus = base / "corpus"
        seeds = fuzz.write_corpus(corpus, harness=harness)
        env = fuzz.protocol_env(base / "work") if harness == "protocol" else None
        print(f"[{harness}] fuzzer {exe}\n[{harness}] corpus {corpus} ({len(list(corpus.iterdir()))} inputs, "
              f"{len(seeds)} seeds)", flush=True)
        r = fuzz.run_fuzzer(exe, corpus, int(args.minutes * 60), base / "artifacts", jobs=args.jobs, env=env)
        runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", r.stderr)
        speed = re.search(r"stat::average_exec_per_sec:\s*(\d+)", r.stderr)
        found = sorted((base / "artifacts").glob("*"))
        print(f"[{harness}] executions {runs.group(1) if runs else '?'} ({speed.group(1) if speed else '?'}/s) "
              f"in {args.minutes:g} min, {len(found)} finding(s)", flush=True)
        if r.returncode != 0 or found:
            print("\n".join(r.stderr.splitlines()[-30:]))
            print(f"[{harness}] FOUND {len(found)} input(s): " + ", ".join(p.name for p in found), flush=True)
            failed.append(harness)
    if failed:
        return 1
    print("no crash, no sanitizer report, no hang")
    return 0


if __name__ == "__main__":
    sys.exit(main())
