"""Is the default build also the smallest? Total RAM of the default int8 build next to the lean library build
and the fp32 build of the same model, for the examples and tests/models_int8 (issue 25's two rules:
default <= library, int8 <= fp32).

    python bench/bench_default_ram.py [--models mnist,kws_dscnn,lstm_2layer] [--board mps2-an505] [--io int8]

Build only (no emulator needed): every cross build reserves the stack bound it computes from the image's code
(mcu_gen/firmware/stack_bound.py), so report.json's ram_bytes (.data + .bss + reserved stack) is the
deployable figure without a run. Prints one row per model: RAM of int8 default / int8 --kernels library
--backend portable / fp32, with arena and stack of each, and whether each rule holds.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUILDS = [("int8 default", {"quantize": "int8"}),
          ("int8 library", {"quantize": "int8", "kernels": "library", "backend": "portable"}),
          ("fp32", {})]


def model_files(names) -> list:
    found = {p.parent.name: p for p in sorted((ROOT / "examples").glob("*/model.py"))}
    found.update({p.stem: p for p in sorted((ROOT / "tests" / "models_int8").glob("*.py"))})
    return [(n, found[n]) for n in (names or sorted(found))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated example or tests/models_int8 names (default: all)")
    ap.add_argument("--board", default="mps2-an505")
    ap.add_argument("--io", default="float32", choices=("float32", "int8"),
                    help="I/O dtype of the int8 builds (int8: the issue's deployable figures, e.g. VWW's arena)")
    args = ap.parse_args()
    import mcu_gen

    names = args.models.split(",") if args.models else None
    print(f"| model | {' | '.join(b for b, _ in BUILDS)} | default <= library | int8 <= fp32 |")
    print("|---|" + "---:|" * len(BUILDS) + "---|---|")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mcu-default-ram-") as tmp:
        for name, path in model_files(names):
            cells, ram = [], {}
            for label, kw in BUILDS:
                try:
                    io = {"io": args.io} if "quantize" in kw else {}
                    r = mcu_gen.build(str(path), board=args.board, out=Path(tmp) / name / label.replace(" ", "-"),
                                      **kw, **io)
                except Exception as e:  # a model that does not build is a row, not the end of the table
                    cells.append(f"fails: {str(e).splitlines()[0][:60]}")
                    continue
                rep = r.report
                ram[label] = rep["ram_bytes"]
                cells.append(f"{rep['ram_bytes']:,} (arena {rep['arena_bytes']:,}, stack {rep['stack']['reserved_bytes']:,})")
            rules = []
            for a, b in (("int8 default", "int8 library"), ("int8 default", "fp32")):
                ok = a in ram and b in ram and ram[a] <= ram[b]
                failed += not ok
                rules.append("yes" if ok else (f"no (+{ram[a] - ram[b]:,} B)" if a in ram and b in ram else "—"))
            print(f"| {name} | {' | '.join(cells)} | {rules[0]} | {rules[1]} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
