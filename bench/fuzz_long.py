"""Fuzz the program loader/verifier (and execute) for longer than the test does.

    python bench/fuzz_long.py [--minutes 30] [--jobs 2] [--corpus DIR] [--examples mul_add,mnist,kws_dscnn]

Seeds: the examples' .pte files (generated now). The corpus directory is kept
(default mcu-gen-out/fuzz/corpus) so later runs continue where this one
stopped; crashing inputs go to mcu-gen-out/fuzz/artifacts. Turn each crash into
a regression input in tests/test_fuzz.py and fix the runtime.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.dev import fuzz  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--corpus", default=str(ROOT / "mcu-gen-out" / "fuzz" / "corpus"))
    ap.add_argument("--artifacts", default=str(ROOT / "mcu-gen-out" / "fuzz" / "artifacts"))
    ap.add_argument("--examples", default=",".join(fuzz.SEED_EXAMPLES))
    args = ap.parse_args()
    exe = fuzz.build_fuzzer()
    corpus = Path(args.corpus)
    seeds = fuzz.write_corpus(corpus, args.examples.split(","))
    print(f"fuzzer {exe}\ncorpus {corpus} ({len(list(corpus.iterdir()))} inputs, {len(seeds)} seeds)", flush=True)
    r = fuzz.run_fuzzer(exe, corpus, int(args.minutes * 60), Path(args.artifacts), jobs=args.jobs)
    tail = "\n".join(r.stderr.splitlines()[-15:])
    print(tail)
    found = sorted(Path(args.artifacts).glob("*"))
    if r.returncode != 0 or found:
        print(f"FOUND {len(found)} input(s): " + ", ".join(p.name for p in found))
        return 1
    print("no crash, no sanitizer report, no hang")
    return 0


if __name__ == "__main__":
    sys.exit(main())
