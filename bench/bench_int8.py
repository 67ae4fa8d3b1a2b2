"""int8 on the emulated Cortex-M33 (QEMU mps2-an505, -icount): one row per example and I/O mode.

    python bench/bench_int8.py [--examples mnist,kws_dscnn] [--io float32,int8] [--markdown]
    python bench/bench_int8.py --models            # tests/models_int8: MLPerf Tiny from the wheel + ours

Columns: bit-exact with the host integer reference, our arena (and its lower bound) against
ExecuTorch 1.5.1's int8 Cortex-M arena and .pte (../shared/DESIGN.md, M4/M33 figures), our .pte,
flash and RAM of the whole image, instructions per inference, ExecuTorch's instructions where
measured (its cortex_m library on CMSIS-NN, M33), and the quantization error against fp32
(max abs error of the dequantized outputs, top-1 agreement for classifiers). With --models, the
models of tests/models_int8 (ExecuTorch's four MLPerf Tiny models from the executorch wheel and
eight with ordinary layers), float I/O, with the number of fp32 islands and their operators.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.device.runner import run  # noqa: E402

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]
ET_ARENA = {"mnist": 6_768, "kws_dscnn": 16_000, "ic_resnet8": 49_728, "vww_mobilenet": 138_240,
            "ad_autoencoder": 3_200}
ET_PTE = {"mnist": 12_760, "kws_dscnn": 54_240, "ic_resnet8": 100_744, "vww_mobilenet": 313_944,
          "ad_autoencoder": 285_376}
ET_INSTRUCTIONS_M33 = {"mnist": 1_405_313, "kws_dscnn": 10_410_984}


MODELS_DIR = ROOT / "tests" / "models_int8"


def row(name, io, out, path=None):
    import json

    path = path or f"examples/{name}/model.py"
    r = run(str(path), board="mps2-an505", quantize="int8", io=io, out=out / f"{name}-{io}", max_inputs=1)
    islands = json.loads((out / f"{name}-{io}" / "report.json").read_text()).get("fp32_fallback", [])
    return {
        "model": name, "io": io, "bit_exact": r.bit_exact, "arena": r.arena_bytes,
        "lower_bound": r.arena_lower_bound_bytes, "et_arena": ET_ARENA.get(name), "pte": r.pte_bytes,
        "et_pte": ET_PTE.get(name), "flash": r.flash_bytes, "ram": r.ram_bytes,
        "instructions": r.instructions_per_inference, "et_instructions": ET_INSTRUCTIONS_M33.get(name),
        "max_abs_error": r.quant_max_abs_error, "top1": r.top1_agreement,
        "islands": len(islands), "island_ops": ",".join(sorted({f["op"].split("::")[-1] for f in islands})) or None,
    }


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--io", default="float32,int8")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--models", action="store_true", help="the models of tests/models_int8 instead of examples/")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.models:
            for path in sorted(MODELS_DIR.glob("*.py")):
                rows.append(row(path.stem, "float32", Path(tmp), path))
                print(f"# {path.stem} done", file=sys.stderr, flush=True)
        for name in ([] if args.models else args.examples.split(",")):
            for io in args.io.split(","):
                rows.append(row(name, io, Path(tmp)))
                print(f"# {name} io={io} done", file=sys.stderr, flush=True)
    keys = list(rows[0])
    if args.markdown:
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        for r in rows:
            print("| " + " | ".join(fmt(r[k]) for k in keys) + " |")
    else:
        widths = [max(len(k), *(len(fmt(r[k])) for r in rows)) for k in keys]
        print("  ".join(k.rjust(w) for k, w in zip(keys, widths)))
        for r in rows:
            print("  ".join(fmt(r[k]).rjust(w) for k, w in zip(keys, widths)))
    return 0 if all(r["bit_exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
