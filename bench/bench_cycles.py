"""Estimated cycles per inference of the four MLPerf Tiny networks on a Cortex-M33 (QEMU mps2-an505)
and a Cortex-M55 (QEMU mps3-an547), beside the best published MLPerf Tiny latency on a Cortex-M33
at 160 MHz.

    MCU_GEN_CMSIS_NN=/path/to/CMSIS-NN python bench/bench_cycles.py [--examples ...] [--boards ...] [--kernels ...]

Instructions are exact (QEMU -icount, int8 with int8 I/O, outputs bit-exact with the host integer
reference). Cycles are an estimate: the QEMU plugin's instruction counts per class times the core's
cycle table (mcu_gen/device/cycles.py; model, sources and known error in docs/cycles.md); "range"
is what the table's own ranges allow (branch refill 1-3 cycles, divide 2-12, ...). Milliseconds are
at 160 MHz for both cores, the clock of the published figures (NUCLEO-U575ZI, mlcommons tiny_results
v1.1-v1.3, issue 17); "ratio" is estimated ms / published ms (> 1: slower than the published best).
The published figures are Cortex-M33 results, so the M55 rows compare another core with them.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.device.runner import run  # noqa: E402

EXAMPLES = ["kws_dscnn", "vww_mobilenet", "ic_resnet8", "ad_autoencoder"]
BOARDS = ["mps2-an505", "mps3-an547"]
CLOCK_HZ = 160e6
# Best published MLPerf Tiny closed-division latency on a Cortex-M33 at 160 MHz (ms, engine).
PUBLISHED_M33_MS = {"kws_dscnn": (28.99, "X-CUBE-AI 10.2"), "vww_mobilenet": (59.27, "X-CUBE-AI 10.2"),
                    "ic_resnet8": (104.3, "Plumerai"), "ad_autoencoder": (3.21, "X-CUBE-AI 10.2")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", nargs="+", default=EXAMPLES)
    ap.add_argument("--boards", nargs="+", default=BOARDS)
    ap.add_argument("--kernels", default="auto", choices=["auto", "library", "generated"],
                    help="mcu-gen's kernel choice (auto: generated per layer where they are faster)")
    args = ap.parse_args(argv)
    cmsis_nn = os.environ.get("MCU_GEN_CMSIS_NN")
    backend = "cmsis-nn" if cmsis_nn else "portable"
    print(f"int8, int8 I/O, backend {backend}, kernels {args.kernels}"
          + ("" if cmsis_nn else " (MCU_GEN_CMSIS_NN not set: no CMSIS-NN)"))
    print("| network | core (board) | instructions | est. cycles | range | cycles/instr | est. ms @160 MHz | "
          "published best (M33 @160 MHz) | ratio | bit-exact |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failed, where = 0, []
    with tempfile.TemporaryDirectory(prefix="bench-cycles-") as tmp:
        for ex in args.examples:
            for board in args.boards:
                try:
                    r = run(str(ROOT / "examples" / ex / "model.py"), board=board, out=Path(tmp) / f"{ex}-{board}",
                            quantize="int8", io="int8", backend=backend, cmsis_nn_path=cmsis_nn,
                            kernels=args.kernels, n_random=1, max_inputs=1)
                except Exception:  # one failure must not hide the others
                    traceback.print_exc()
                    failed += 1
                    continue
                n, cyc = r.instructions_per_inference, r.estimated_cycles_per_inference
                core = r.cycle_model.split()[0] if r.cycle_model else "?"
                best = PUBLISHED_M33_MS.get(ex)
                if cyc is None:
                    print(f"| {ex} | {board} | {n:,} | n/a ({r.cycles_unavailable}) | | | | | | {r.bit_exact} |")
                    continue
                ms = cyc / CLOCK_HZ * 1e3
                lo, hi = r.estimated_cycles_range
                pub = f"{best[0]:g} ms ({best[1]})" if best else "n/a"
                ratio = f"{ms / best[0]:.2f}x" if best else ""
                print(f"| {ex} | {core} ({board}) | {n:,} | **{cyc:,}** | {lo:,}-{hi:,} | {cyc / n:.2f} | "
                      f"{ms:.2f} ({lo / CLOCK_HZ * 1e3:.2f}-{hi / CLOCK_HZ * 1e3:.2f}) | {pub} | {ratio} | "
                      f"{r.bit_exact} |")
                top = list(r.estimated_cycles_by_class.items())[:6]
                where.append(f"{ex} on {core}: " + ", ".join(
                    f"{name} {c / cyc:.0%} ({r.instruction_classes.get(name, 0):,} instr)" for name, c in top))
    print("\nWhere the estimated cycles go (largest classes, share of the cycles; docs/cycles.md):")
    for line in where:
        print(f"- {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
