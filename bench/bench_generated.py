"""mcu-gen's generated int8 kernels (mcu_gen/backends/generated/, issue 17) against the library
kernels, per network, on the Cortex-M33 (QEMU mps2-an505), with and without CMSIS-NN, beside the
best published MLPerf Tiny result on a Cortex-M33 at 160 MHz; with `--board mps3-an547` the
Cortex-M55's MVE kernels (mcu_gen/backends/generated_mve.py) against today's figures and issue
17's M55 target (0.7x today's).

    MCU_GEN_CMSIS_NN=/path/to/CMSIS-NN python bench/bench_generated.py [--examples ...] [--backends ...]
    MCU_GEN_CMSIS_NN=/path/to/CMSIS-NN python bench/bench_generated.py --board mps3-an547

Instructions per inference are exact (QEMU -icount, int8 I/O, outputs verified bit for bit
against the host integer reference). They are not cycles, so they are compared only with
instructions (library vs generated, issue 17's instruction targets). The published results are
cycles: they are compared with the estimated cycles of the generated build (docs/cycles.md's
per-class model, `estimated_cycles_per_inference` of `mcu-gen run`; an estimate with the known
error described there, e.g. zero flash wait states), never with instruction counts. Without an
estimate (no QEMU plugin, no host C compiler) those columns say why not.
"flash" is the firmware's flash bytes; "pre-widened" the int16 weight copies the generated
layers keep (in flash; the program the image embeds leaves those weights out: docs/generated_kernels.md, "Flash"). "RAM" is the deployable image's
RAM (.data + .bss + the stack measured on the device, as `mcu-gen run` prints it): the generated
layers need every program value decoded at load (20 bytes each) and their own stack buffers.
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
from mcu_gen.firmware.report import load_report  # noqa: E402

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]
# Issue 17's M33 targets (instructions per inference, int8 I/O): the published best cycle counts below.
TARGET_M33 = {"kws_dscnn": 4_600_000, "vww_mobilenet": 9_400_000, "ic_resnet8": 16_600_000, "ad_autoencoder": 500_000}
# Best published MLPerf Tiny closed-division latency on a Cortex-M33 @ 160 MHz (NUCLEO-U575ZI,
# mlcommons tiny_results v1.1-v1.3; DESIGN.md), in cycles.
PUBLISHED_M33 = {"kws_dscnn": (4_640_000, "X-CUBE-AI 10.2"), "vww_mobilenet": (9_480_000, "X-CUBE-AI 10.2"),
                 "ic_resnet8": (16_700_000, "Plumerai"), "ad_autoencoder": (510_000, "X-CUBE-AI 10.2")}
CLOCK_HZ = 160e6
# Issue 17's Cortex-M55 targets (mps3-an547, int8 I/O): 0.7x the instructions per inference of
# the library build (CMSIS-NN MVE) measured when the issue was taken up.
TODAY_M55 = {"kws_dscnn": 1_811_006, "vww_mobilenet": 5_982_925, "ic_resnet8": 4_655_023, "ad_autoencoder": 148_337}
TARGET_M55 = {"kws_dscnn": 1_270_000, "vww_mobilenet": 4_190_000, "ic_resnet8": 3_260_000, "ad_autoencoder": 104_000}


def measure(example: str, backend: str, kernels: str, out: Path, cmsis_nn, board: str = "mps2-an505"):
    r = run(str(ROOT / "examples" / example / "model.py"), board=board, out=out, quantize="int8", io="int8",
            backend=backend, cmsis_nn_path=cmsis_nn, kernels=kernels, n_random=1)
    return r, load_report(Path(r.out)).get("generated_kernels", {})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", nargs="+", default=EXAMPLES)
    ap.add_argument("--backends", nargs="+", default=["cmsis-nn", "portable"])
    ap.add_argument("--board", default="mps2-an505", help="mps2-an505 (M33, DSP) or mps3-an547 (M55, MVE)")
    args = ap.parse_args(argv)
    cmsis_nn = os.environ.get("MCU_GEN_CMSIS_NN")
    backends = [b for b in args.backends if b != "cmsis-nn" or cmsis_nn]
    if len(backends) < len(args.backends):
        print("CMSIS-NN not given (MCU_GEN_CMSIS_NN): measuring the portable backend only")
    if args.board != "mps2-an505":
        return m55_table(args.examples, backends, cmsis_nn, args.board)
    print("instructions per inference (exact) vs instructions; estimated cycles (docs/cycles.md) vs published cycles")
    print("| backend | example | library kernels (instr.) | generated (instr.) | target (instr.) | speed-up (instr.) | "
          "flash library / generated | pre-widened | RAM library / generated | generated est. cycles | "
          "est. ms @160 MHz | published best (cycles) | est. cycles / published | bit-exact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-gen-") as tmp:
        for backend in backends:
            for ex in args.examples:
                try:
                    lib, _ = measure(ex, backend, "library", Path(tmp) / f"{ex}-{backend}-lib", cmsis_nn)
                    gen, info = measure(ex, backend, "auto", Path(tmp) / f"{ex}-{backend}-gen", cmsis_nn)
                except Exception:  # one failure must not hide the others
                    traceback.print_exc()
                    continue
                li, gi = lib.instructions_per_inference, gen.instructions_per_inference
                best = PUBLISHED_M33.get(ex)
                gc = gen.estimated_cycles_per_inference  # cycles are compared with cycles only
                est = f"{gc:,}" if gc else f"n/a ({gen.cycles_unavailable or 'no estimate'})"
                ms = f"{gc / CLOCK_HZ * 1e3:.1f}" if gc else "n/a"
                ratio = f"{gc / best[0]:.2f}x" if best and gc else ""
                target = TARGET_M33.get(ex)
                met = f"<= {target / 1e6:.2f} M {'met' if gi <= target else 'MISSED'}" if target else "-"
                print(f"| {backend} | {ex} | {li:,} | **{gi:,}** | {met} | {li / gi:.2f}x | {lib.flash_bytes:,} / "
                      f"{gen.flash_bytes:,} | {info.get('prewidened_weight_bytes', 0):,} | {lib.ram_bytes:,} / "
                      f"{gen.ram_bytes:,} | {est} | {ms} | "
                      f"{f'{best[0]:,} ({best[1]})' if best else 'n/a'} | {ratio} | "
                      f"{lib.bit_exact and gen.bit_exact} |")
    return 0


def m55_table(examples, backends, cmsis_nn, board: str) -> int:
    """The Cortex-M55 (MVE) table: library kernels, generated MVE kernels, issue 17's target."""
    print(f"{board}: instructions per inference, int8 I/O (QEMU -icount, verified bit-exact)\n")
    print("| backend | example | library kernels | generated (MVE) | speed-up | today (issue 17) | target | "
          "met | flash library / generated | reordered int8 weights | RAM library / generated | bit-exact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-gen-m55-") as tmp:
        for backend in backends:
            for ex in examples:
                try:
                    lib, _ = measure(ex, backend, "library", Path(tmp) / f"{ex}-{backend}-lib", cmsis_nn, board)
                    gen, info = measure(ex, backend, "auto", Path(tmp) / f"{ex}-{backend}-gen", cmsis_nn, board)
                except Exception:  # one failure must not hide the others
                    traceback.print_exc()
                    continue
                li, gi = lib.instructions_per_inference, gen.instructions_per_inference
                today, target = TODAY_M55.get(ex), TARGET_M55.get(ex)
                met = ("yes" if gi <= target else "no") if target else ""  # with and without CMSIS-NN (issue 17)
                print(f"| {backend} | {ex} | {li:,} | **{gi:,}** | {li / gi:.2f}x | "
                      f"{f'{today:,}' if today else 'n/a'} | {f'{target:,}' if target else 'n/a'} | {met} | "
                      f"{lib.flash_bytes:,} / {gen.flash_bytes:,} | {info.get('reordered_weight_bytes', 0):,} | "
                      f"{lib.ram_bytes:,} / {gen.ram_bytes:,} | {lib.bit_exact and gen.bit_exact} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
