"""Random int8 CNNs on the default (generated) kernels under QEMU: every run bit-exact, or a finding.

    python bench/sweep_random_cnn.py [--count 12] [--seed 0] [--boards mps2-an505,mps3-an547,mps2-an386]
                                     [--out mcu-gen-out/sweep_random_cnn] [--ram] [--print-model SEED]

Seed s draws one network (random_cnn.spec(s)): a stem convolution (1x1, 3x3 or 5x5, stride 1 or 2, with or
without padding, 1-8 input channels), then 2-5 blocks among depthwise-separable pairs (depthwise 3x3 at stride 1
or 2, padding 0 or 1, then a 1x1 convolution), full 3x3 convolutions, 1x1 convolutions, residual blocks (a
quantized add) and 2x2 max/average pools, each followed by ReLU, ReLU6 or nothing; odd, non-square inputs of
5-49 pixels, channel counts mostly multiples of 4 (up to 96), else from 1 to 40; a global average pool and a linear
head. Each network is written as a model file (mcu-gen's protocol: model(), example_inputs(),
calibration_inputs()) and run with `mcu_gen.run(..., quantize="int8", io="int8")` on each board: the device's
outputs must equal the host integer reference bit for bit. The table names the seed, the network, the board,
the layers generated and skipped, and the result; a finding's model file stays in --out for a regression test.
With --ram each network also runs with `--kernels library`, and the table adds both builds' total RAM
(report.json ram_bytes, the stack measured): the default build must not take more (issue 25), else a finding.
Exit status 1 when any run was not bit-exact, failed, or (--ram) took more RAM than the library build.
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcu_gen  # noqa: E402
from mcu_gen.dev import random_cnn  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--boards", default="mps2-an505,mps3-an547,mps2-an386")
    ap.add_argument("--out", default=str(ROOT / "mcu-gen-out" / "sweep_random_cnn"))
    ap.add_argument("--ram", action="store_true", help="also the --kernels library build's total RAM")
    ap.add_argument("--print-model", type=int, metavar="SEED", help="print seed's model file and stop")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # the CMSIS-NN-not-found and torch deprecation warnings of every run
    if args.print_model is not None:
        print(random_cnn.model_source(args.print_model))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ram_head = f"  {'RAM B':>8}  {'library':>8}" if args.ram else ""
    print(f"{'seed':>5}  {'board':<11}  {'generated':>9}  {'skipped':>7}{ram_head}  result  network")
    bad = []
    for seed in range(args.seed, args.seed + args.count):
        model = out / f"cnn_{seed}.py"
        model.write_text(random_cnn.model_source(seed))
        for board in args.boards.split(","):
            run_dir = out / f"cnn_{seed}-{board}"
            gen = skipped = ram = lib_ram = "-"
            try:
                r = mcu_gen.run(str(model), board=board, out=run_dir, quantize="int8", io="int8")
                report = json.loads((run_dir / "report.json").read_text())
                kernels = report.get("generated_kernels") or {}
                gen, skipped = len(kernels.get("layers", [])), len(kernels.get("skipped", []))
                result = "exact" if r.verified and r.bit_exact else "DIFFERS"
                if args.ram:
                    lib = mcu_gen.run(str(model), board=board, out=run_dir / "library", quantize="int8", io="int8",
                                      kernels="library")
                    ram = report["ram_bytes"]
                    lib_ram = json.loads((run_dir / "library" / "report.json").read_text())["ram_bytes"]
                    if result == "exact" and not (lib.verified and lib.bit_exact):
                        result = "DIFFERS"
                    if result == "exact" and ram > lib_ram:
                        result = "RAM>"
            except Exception as e:  # noqa: BLE001 - a finding, reported with its message
                result = "FAILED"
                (run_dir / "error.txt").parent.mkdir(parents=True, exist_ok=True)
                (run_dir / "error.txt").write_text(traceback.format_exc())
                print(f"      {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            if result != "exact":
                bad.append((seed, board, result))
            ram_cols = f"  {ram:>8}  {lib_ram:>8}" if args.ram else ""
            print(f"{seed:>5}  {board:<11}  {gen:>9}  {skipped:>7}{ram_cols}  {result:<6}  {random_cnn.describe(seed)}",
                  flush=True)
    if bad:
        print(f"{len(bad)} finding(s): " + ", ".join(f"seed {s} on {b} ({r})" for s, b, r in bad)
              + f"; model files and errors in {out}")
        return 1
    print(f"all {args.count} networks bit-exact on {args.boards}"
          + (", none with more RAM than the library build" if args.ram else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
