"""fp32 on the emulated Cortex-M33 (QEMU mps2-an505, -icount): one row per example.

    python bench/bench_fp32.py [--examples mnist,kws_dscnn] [--markdown]

Columns: our arena and its lower bound (most bytes live at one step), .pte,
flash and RAM of the whole image, instructions per inference (deterministic
under -icount), and ExecuTorch 1.5.1's figures for the same networks from
../shared/DESIGN.md (fp32 portable arena, .pte, instructions where measured).
A last row runs ExecuTorch's own MNIST .pte on mcu-gen firmware (needs the
executorch wheel), the figure ExecuTorch's runtime needs 18.1 M instructions for.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcu_gen  # noqa: E402

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]
# ExecuTorch 1.5.1 fp32 portable, measured on this machine (DESIGN.md, research/peer-executorch.md).
ET_ARENA = {"mnist": 43_264, "kws_dscnn": 64_000, "ic_resnet8": 196_608, "vww_mobilenet": 294_912,
            "ad_autoencoder": 330_752}
ET_PTE = {"mnist": 25_768, "kws_dscnn": 116_288, "ic_resnet8": 329_664, "vww_mobilenet": 930_208,
          "ad_autoencoder": 1_093_424}
ET_MNIST_INSTRUCTIONS = 18_100_000  # its runtime, portable kernels, -O2, Cortex-M33 on QEMU


def row(name, out):
    r = mcu_gen.run(f"examples/{name}/model.py", board="mps2-an505", out=out / name, n_random=1)
    return {
        "model": name,
        "verified": r.verified,
        "arena": r.arena_bytes,
        "lower_bound": r.arena_lower_bound_bytes,
        "et_arena": ET_ARENA.get(name),
        "pte": r.pte_bytes,
        "et_pte": ET_PTE.get(name),
        "flash": r.flash_bytes,
        "ram": r.ram_bytes,
        "instructions": r.instructions_per_inference,
        "et_instructions": ET_MNIST_INSTRUCTIONS if name == "mnist" else None,
    }


def et_mnist_row(out):
    try:
        import torch
        from executorch.exir import to_edge_transform_and_lower
    except ImportError:
        return None
    from mcu_gen.capture.model_file import load_model_file

    spec = load_model_file(ROOT / "examples" / "mnist" / "model.py")
    ep = torch.export.export(spec.module.eval(), spec.example_inputs)
    path = out / "et_mnist.pte"
    path.write_bytes(to_edge_transform_and_lower(ep).to_executorch().buffer)
    r = mcu_gen.run(pte_path=path, board="mps2-an505", out=out / "et_mnist", n_random=1)
    return {"model": "mnist (ExecuTorch's .pte)", "verified": r.verified, "arena": r.arena_bytes,
            "lower_bound": r.arena_lower_bound_bytes, "et_arena": ET_ARENA["mnist"], "pte": r.pte_bytes,
            "et_pte": ET_PTE["mnist"], "flash": r.flash_bytes, "ram": r.ram_bytes,
            "instructions": r.instructions_per_inference, "et_instructions": ET_MNIST_INSTRUCTIONS}


def fmt(x):
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "NO"
    return f"{x:,}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--no-et", action="store_true", help="skip the ExecuTorch-exported MNIST row")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcu-bench-") as tmp:
        out = Path(tmp)
        for name in args.examples.split(","):
            rows.append(row(name, out))
            print(f"  {name}: done", file=sys.stderr)
        if not args.no_et:
            et = et_mnist_row(out)
            if et:
                rows.append(et)
    cols = [("model", "model"), ("verified", "verified"), ("arena", "arena B"), ("lower_bound", "lower bound B"),
            ("et_arena", "ET arena B"), ("pte", ".pte B"), ("et_pte", "ET .pte B"), ("flash", "flash B"),
            ("ram", "RAM B"), ("instructions", "instr/inference"), ("et_instructions", "ET instr/inference")]
    print("| " + " | ".join(h for _, h in cols) + " | arena / ET |")
    print("|" + "---|" * (len(cols) + 1))
    for r in rows:
        ratio = f"{r['arena'] / r['et_arena']:.2f}" if r.get("et_arena") else "—"
        print("| " + " | ".join(r[k] if k == "model" else fmt(r[k]) for k, _ in cols) + f" | {ratio} |")


if __name__ == "__main__":
    main()
