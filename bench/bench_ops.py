"""Operator conformance on PyTorch's own operator test inputs (OpInfo), mcu-gen next to ExecuTorch.

    python bench/bench_ops.py [--dtypes float32,int64,bool] [--ops add,abs,...] [--no-executorch]
                              [--qemu N] [--families N] [--json rows.json] [--executorch-from rows.json]
                              [--quantize int8]

Cases (mcu_gen/dev/conformance/cases.py): per OpInfo entry and dtype, the first sample small enough for
an MCU (every tensor <= 4096 elements, none empty) that torch.export captures, with deterministic
tensor outputs. Each runs in ExecuTorch's portable runtime (the executorch wheel, in a subprocess per
batch: it aborts on some inputs) and through mcu-gen on one host runner with every portable kernel
(AddressSanitizer/UBSan), both compared with eager PyTorch (fp32 within `mcu-gen run`'s tolerance,
integers and bools exact). --qemu N runs N of the host-correct cases on QEMU mps2-an505 as well.
Prints: cases captured, ExecuTorch-correct, mcu-gen-correct (of those), mcu-gen's statuses, the
kernels missing most often, and a per-family table.
--quantize int8: every float32 case runs quantized as `mcu-gen build --quantize int8` does it (calibrated on
its own inputs) and must be bit-exact with the host integer reference (what `mcu-gen run --quantize int8`
compares the device with); prints how many of the ExecuTorch-correct float32 cases are, and how many ran
int8 kernels rather than only fp32 islands between a quantize and a dequantize.
"""
from __future__ import annotations

import argparse
import collections
import json
import logging
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="float32", help="comma-separated: float32,int64,int32,bool")
    ap.add_argument("--ops", default=None, help="comma-separated OpInfo names (default: all)")
    ap.add_argument("--no-executorch", action="store_true", help="skip ExecuTorch's runtime")
    ap.add_argument("--qemu", type=int, default=0, help="also run this many host-correct cases on QEMU")
    ap.add_argument("--families", type=int, default=30, help="rows of the per-family table (0: all)")
    ap.add_argument("--json", default=None, help="write every case's results here")
    ap.add_argument("--executorch-from", default=None,
                    help="reuse ExecuTorch's statuses from an earlier --json file (the wheel does not change)")
    ap.add_argument("--quantize", default=None, choices=["int8"],
                    help="run float32 cases quantized, bit-exact with the host integer reference")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")

    from mcu_gen.dev.conformance import executorch as et
    from mcu_gen.dev.conformance.cases import iter_cases
    from mcu_gen.dev.conformance.host import HostRunner
    from mcu_gen.dev.conformance.qemu import run_on_board

    t0 = time.time()
    runner = HostRunner()
    cases, ours = [], {}
    ops = args.ops.split(",") if args.ops else None
    for case in iter_cases(dtypes=tuple(args.dtypes.split(",")), ops=ops):
        cases.append(case)
        ours[case.id] = runner.run(case, quantize=args.quantize)
    t_host = time.time() - t0
    if args.executorch_from:
        earlier = {r["case"]: (r["executorch"], r["executorch_detail"])
                   for r in json.loads(Path(args.executorch_from).read_text()) if r.get("executorch")}
        todo = [c.id for c in cases if c.id not in earlier]
        theirs = {**earlier, **(et.run_in_executorch(todo) if todo and not args.no_executorch else {})}
        theirs = {c.id: theirs[c.id] for c in cases if c.id in theirs}
    else:
        theirs = {} if args.no_executorch else et.run_in_executorch([c.id for c in cases])
    t_et = time.time() - t0 - t_host
    qemu = {}
    if args.qemu:
        for case in [c for c in cases if ours[c.id].status == "correct"][:args.qemu]:
            qemu[case.id] = run_on_board(case)

    what = f"{args.dtypes}" + (f", --quantize {args.quantize}: float32 cases bit-exact with the integer reference"
                               if args.quantize else "")
    print(f"OpInfo conformance ({what}; host {t_host:.0f} s, ExecuTorch {t_et:.0f} s)")
    for dtype in args.dtypes.split(","):
        ds = [c for c in cases if c.dtype == dtype]
        ok = [c for c in ds if ours[c.id].status == "correct"]
        line = f"  {dtype:8s} cases captured {len(ds):4d}   mcu-gen correct {len(ok):4d}"
        if theirs:
            et_ok = [c for c in ds if theirs.get(c.id, ("",))[0] == "correct"]
            both = [c for c in et_ok if ours[c.id].status == "correct"]
            line += f"   ExecuTorch correct {len(et_ok):4d}   mcu-gen correct of those {len(both):4d}"
        print(line)
    if args.quantize:
        fl = [c for c in cases if c.dtype == "float32"]
        et_ok = [c for c in fl if theirs.get(c.id, ("",))[0] == "correct"] if theirs else fl
        exact = [c for c in et_ok if ours[c.id].status == "correct"]
        of = "ExecuTorch-correct float32 cases" if theirs else "float32 cases"
        strict = [c for c in exact if ours[c.id].bit_exact is not False]
        print(f"  int8: {len(exact)} of {len(et_ok)} {of} build and run correct "
              f"({100 * len(exact) / max(1, len(et_ok)):.1f}%): int8, integer and dequantized outputs bit-exact "
              f"with the integer reference, fp32-island outputs nothing quantizes within the fp32 tolerance")
        print(f"  int8: {len(strict)} of {len(et_ok)} {of} bit-exact in every output "
              f"({100 * len(strict) / max(1, len(et_ok)):.1f}%)")
        modes = collections.Counter(ours[c.id].mode for c in exact)
        print(f"  int8 modes of those correct: int8 kernels {modes['int8']}, only fp32 islands between "
              f"quantize/dequantize {modes['fp32 islands']}, nothing quantized {modes['fp32']}")
    status = collections.Counter(r.status for r in ours.values())
    print("  mcu-gen statuses: " + ", ".join(f"{s} {status[s]}" for s in ("correct", "incorrect", "missing",
                                                                          "refused", "crash")))
    if theirs:
        st = collections.Counter(s for s, _ in theirs.values())
        print("  ExecuTorch statuses: " + ", ".join(f"{k} {v}" for k, v in st.most_common()))
    if qemu:
        q = collections.Counter(r.status for r in qemu.values())
        print(f"  QEMU mps2-an505 (of {len(qemu)} host-correct cases): "
              + ", ".join(f"{k} {v}" for k, v in q.most_common()))
    missing = collections.Counter()
    for c in cases:
        if not theirs or theirs.get(c.id, ("",))[0] == "correct":
            missing.update(ours[c.id].missing)
    print("\nmissing kernels" + (" (cases ExecuTorch computes correctly)" if theirs else "") + ":")
    for name, n in missing.most_common(25):
        print(f"  {n:4d}  {name}")
    bad = [c for c in cases if ours[c.id].status in ("incorrect", "crash")]
    if bad:
        print("\nincorrect / crash:")
        for c in bad:
            print(f"  {c.id}: {ours[c.id].status}: {ours[c.id].detail[:160]}")

    fam = collections.defaultdict(lambda: [0, 0, 0])
    for c in cases:
        row = fam[c.family]
        row[0] += 1
        row[1] += theirs.get(c.id, ("",))[0] == "correct"
        row[2] += ours[c.id].status == "correct"
    rows = sorted(fam.items(), key=lambda kv: (-(kv[1][1] - kv[1][2]), -kv[1][0], kv[0]))
    print(f"\nper family (sorted by ExecuTorch-correct minus mcu-gen-correct){'' if args.families == 0 else f', first {args.families}'}:")
    print(f"  {'family':28s} {'cases':>5s} {'ExecuTorch':>10s} {'mcu-gen':>8s}")
    for name, (n, e, m) in rows[:args.families or None]:
        print(f"  {name:28s} {n:5d} {e if theirs else '-':>10} {m:8d}")
    if args.json:
        Path(args.json).write_text(json.dumps([{**ours[c.id].as_dict(), "family": c.family, "dtype": c.dtype,
                                                "executorch": theirs.get(c.id, (None, ""))[0],
                                                "executorch_detail": theirs.get(c.id, (None, ""))[1],
                                                "qemu": qemu[c.id].status if c.id in qemu else None}
                                               for c in cases], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
