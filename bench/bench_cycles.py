"""Estimated cycles per inference on a Cortex-M33 (QEMU mps2-an505) and a Cortex-M55 (QEMU mps3-an547):
the four MLPerf Tiny networks in int8 with library and generated kernels side by side, beside the best
published MLPerf Tiny latency on a Cortex-M33 at 160 MHz; and three fp32 networks before and after the
register-blocked fp32 convolution (issue 27).

    [MCU_GEN_CMSIS_NN=/path/to/CMSIS-NN] python bench/bench_cycles.py [--models ...] [--boards ...] [--quick]
        [--int8-only | --fp32-only]

Instructions are exact (QEMU -icount; int8 with int8 I/O, outputs bit-exact with the host integer
reference; fp32 verified against PyTorch within its tolerance). Cycles are an estimate: the QEMU
plugin's instruction counts per class times the core's cycle table (mcu_gen/device/cycles.py; model,
sources and known error in docs/cycles.md); "range" is what the table's own ranges allow (branch refill
1-3 cycles, divide 2-12, ...). Milliseconds are at 160 MHz for both cores, the clock of the published
figures (NUCLEO-U575ZI, mlcommons tiny_results v1.1-v1.3, issue 17); "ratio" is estimated ms /
published ms (> 1: slower than the published best) of the generated build. The published figures are
Cortex-M33 results, so the M55 rows compare another core with them.

fp32 "before" is main at 925f850 (the portable kernels before issue 27), measured with
`mcu-gen run --board B --model M --json -n 1` (BEFORE_FP32 below); "after" is this tree, same command.
--quick: the M33 only, KWS in int8 and MNIST + KWS in fp32 (a few minutes on a loaded machine).
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

MLPERF = ["kws_dscnn", "vww_mobilenet", "ic_resnet8", "ad_autoencoder"]
FP32 = ["mnist", "kws_dscnn", "mnasnet05"]
BOARDS = ["mps2-an505", "mps3-an547"]
CLOCK_HZ = 160e6
# Best published MLPerf Tiny closed-division latency on a Cortex-M33 at 160 MHz (ms, engine).
PUBLISHED_M33_MS = {"kws_dscnn": (28.99, "X-CUBE-AI 10.2"), "vww_mobilenet": (59.27, "X-CUBE-AI 10.2"),
                    "ic_resnet8": (104.3, "Plumerai"), "ad_autoencoder": (3.21, "X-CUBE-AI 10.2")}
# fp32, portable kernels, main at 925f850: (instructions, estimated cycles) per inference.
BEFORE_FP32 = {
    ("mnist", "mps2-an505"): (948_392, 1_786_254), ("mnist", "mps3-an547"): (886_017, 1_650_161),
    ("kws_dscnn", "mps2-an505"): (25_473_696, 45_717_992), ("kws_dscnn", "mps3-an547"): (22_884_455, 38_612_936),
    ("mnasnet05", "mps2-an505"): (176_516_059, 284_423_169), ("mnasnet05", "mps3-an547"): (161_006_273, 257_797_134),
}


def model_path(name: str) -> Path:
    p = ROOT / "examples" / name / "model.py"
    return p if p.exists() else ROOT / "bench" / "models" / f"{name}.py"


def core_of(r) -> str:
    return r.cycle_model.split()[0] if r.cycle_model else "?"


def int8_rows(models, boards, backend, cmsis_nn, tmp, where) -> int:
    print(f"\n## int8, int8 I/O, backend {backend}: library vs generated kernels (--kernels library / auto)"
          + ("" if cmsis_nn else " (MCU_GEN_CMSIS_NN not set: no CMSIS-NN)"))
    print("| network | core (board) | library instr | library est. cycles | generated instr | "
          "generated est. cycles | range | est. ms @160 MHz | published best (M33 @160 MHz) | ratio | bit-exact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for ex in models:
        for board in boards:
            res = {}
            for kernels in ("library", "auto"):
                try:
                    res[kernels] = run(str(model_path(ex)), board=board, out=Path(tmp) / f"{ex}-{board}-{kernels}",
                                       quantize="int8", io="int8", backend=backend, cmsis_nn_path=cmsis_nn,
                                       kernels=kernels, n_random=1, max_inputs=1)
                except Exception:  # one failure must not hide the others
                    traceback.print_exc()
                    failed += 1
            if "auto" not in res:
                continue
            lib, gen = res.get("library"), res["auto"]
            cyc = gen.estimated_cycles_per_inference
            best = PUBLISHED_M33_MS.get(ex)
            lib_n = f"{lib.instructions_per_inference:,}" if lib else "failed"
            lib_c = f"{lib.estimated_cycles_per_inference:,}" if lib and lib.estimated_cycles_per_inference else "n/a"
            if cyc is None:
                print(f"| {ex} | {board} | {lib_n} | {lib_c} | {gen.instructions_per_inference:,} | "
                      f"n/a ({gen.cycles_unavailable}) | | | | | {gen.bit_exact} |")
                continue
            ms = cyc / CLOCK_HZ * 1e3
            lo, hi = gen.estimated_cycles_range
            pub = f"{best[0]:g} ms ({best[1]})" if best else "n/a"
            ratio = f"{ms / best[0]:.2f}x" if best else ""
            exact = gen.bit_exact and (lib.bit_exact if lib else True)
            print(f"| {ex} | {core_of(gen)} ({board}) | {lib_n} | {lib_c} | {gen.instructions_per_inference:,} | "
                  f"**{cyc:,}** | {lo:,}-{hi:,} | {ms:.2f} | {pub} | {ratio} | {exact} |")
            top = list(gen.estimated_cycles_by_class.items())[:6]
            where.append(f"{ex} int8 generated on {core_of(gen)}: " + ", ".join(
                f"{name} {c / cyc:.0%} ({gen.instruction_classes.get(name, 0):,} instr)" for name, c in top))
    return failed


def fp32_rows(models, boards, tmp, where) -> int:
    print("\n## fp32 (portable kernels): before (main 925f850) and after (this tree)")
    print("| network | core (board) | before instr | before est. cycles | after instr | after est. cycles | "
          "cycles before/after | instr before/after | est. ms @160 MHz | verified (max abs err) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for ex in models:
        for board in boards:
            try:
                r = run(str(model_path(ex)), board=board, out=Path(tmp) / f"{ex}-{board}-fp32", n_random=1,
                        max_inputs=1)
            except Exception:
                traceback.print_exc()
                failed += 1
                continue
            n, cyc = r.instructions_per_inference, r.estimated_cycles_per_inference
            b_n, b_c = BEFORE_FP32.get((ex, board), (None, None))
            fmt = lambda v: f"{v:,}" if v else "n/a"  # noqa: E731
            sp_c = f"{b_c / cyc:.2f}x" if b_c and cyc else ""
            sp_n = f"{b_n / n:.2f}x" if b_n and n else ""
            ms = f"{cyc / CLOCK_HZ * 1e3:.2f}" if cyc else "n/a"
            print(f"| {ex} | {core_of(r)} ({board}) | {fmt(b_n)} | {fmt(b_c)} | {n:,} | **{fmt(cyc)}** | {sp_c} | "
                  f"{sp_n} | {ms} | {r.verified} ({r.max_abs_error:.1e}) |")
            if cyc:
                top = list(r.estimated_cycles_by_class.items())[:6]
                where.append(f"{ex} fp32 on {core_of(r)}: " + ", ".join(
                    f"{name} {c / cyc:.0%} ({r.instruction_classes.get(name, 0):,} instr)" for name, c in top))
    return failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", "--examples", nargs="+", default=None,
                    help=f"networks (int8: {', '.join(MLPERF)}; fp32: {', '.join(FP32)}); default all")
    ap.add_argument("--boards", nargs="+", default=None)
    ap.add_argument("--quick", action="store_true", help="M33 only; int8 KWS, fp32 MNIST and KWS")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--int8-only", action="store_true")
    g.add_argument("--fp32-only", action="store_true")
    args = ap.parse_args(argv)
    boards = args.boards or (["mps2-an505"] if args.quick else BOARDS)
    int8_models = [m for m in (args.models or (["kws_dscnn"] if args.quick else MLPERF)) if m in MLPERF]
    fp32_models = [m for m in (args.models or (["mnist", "kws_dscnn"] if args.quick else FP32)) if m in FP32]
    cmsis_nn = os.environ.get("MCU_GEN_CMSIS_NN")
    backend = "cmsis-nn" if cmsis_nn else "portable"
    failed, where = 0, []
    with tempfile.TemporaryDirectory(prefix="bench-cycles-") as tmp:
        if not args.fp32_only and int8_models:
            failed += int8_rows(int8_models, boards, backend, cmsis_nn, tmp, where)
        if not args.int8_only and fp32_models:
            failed += fp32_rows(fp32_models, boards, tmp, where)
    print("\nWhere the estimated cycles go (largest classes, share of the cycles; docs/cycles.md):")
    for line in where:
        print(f"- {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
