"""Runtime overhead and image size against the targets (QEMU mps2-an505, -icount).

    python bench/bench_overhead.py [--no-et] [--no-pte]

Prints one row per target: (a) instructions per inference of `x * y + x` on
1x16 floats (examples/mul_add), everything between the two SysTick readings
around execute(); (b) instructions of ExecuTorch's own MNIST fp32 .pte on
mcu-gen firmware; (c) runtime_core flash; (d) the whole MNIST image without
weights; (e) runtime state in RAM beyond the arena; (f) .pte metadata (the
flatbuffer without constants) against ExecuTorch's for the same five models.
Then the mnist size breakdown (mcu_gen.size_report) as a markdown table.

Builds use the default optimisation: kernels at -O2, the runtime, board files
and src/ at -Os (per-file flags in templates/cmake/CMakeLists.txt.j2).
Instruction counts include the tail/head of the two mcu_pal_ticks() calls
around execute() (~20 instructions on mps2-an505).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcu_gen  # noqa: E402
from mcu_gen.firmware.size_report import markdown_table, pte_split, size_breakdown  # noqa: E402

KIB = 1024
# ExecuTorch 1.5.1 figures (../shared/DESIGN.md and the issue).
ET = {
    "mul_add_instructions": 3_176,  # its runtime + portable kernels, -Os
    "mnist_instructions": 22_700_000,  # -Os (18.1 M at -O2)
    "runtime_core": 11_900,
    "image": 75_600,
    "runtime_state": 3_132 + 900,  # method allocator + kernel registry
    "flatbuffer": {"mnist": 4_680, "kws_dscnn": 16_544, "ic_resnet8": 14_864, "vww_mobilenet": 42_984,
                   "ad_autoencoder": 13_320},
}
LIMITS = {"mul_add_instructions": 600, "mnist_instructions": 9_000_000, "runtime_core": 8 * KIB,
          "image": 16 * KIB, "runtime_state": 512}


def breakdown(result):
    build = result.out / "firmware" / "build"
    return size_breakdown(result.elf, build / "firmware.map", result.board, result.program, result.pte_bytes)


def et_mnist_pte(out: Path) -> Path | None:
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
    return path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-et", action="store_true", help="skip ExecuTorch's MNIST .pte (b)")
    ap.add_argument("--no-pte", action="store_true", help="skip the .pte metadata of the five examples (f)")
    args = ap.parse_args()
    rows = []

    def add(name, value, limit_key, et=None, unit="B"):
        limit = LIMITS.get(limit_key)
        ok = None if limit is None or value is None else value <= limit
        rows.append((name, value, limit, et, unit, ok))

    with tempfile.TemporaryDirectory(prefix="mcu-overhead-") as tmp:
        out = Path(tmp)
        r = mcu_gen.run(ROOT / "examples" / "mul_add" / "model.py", board="mps2-an505", out=out / "mul_add")
        assert r.verified, "mul_add does not verify"
        add("(a) mul+add 1x16: instructions / inference", r.instructions_per_inference, "mul_add_instructions",
            ET["mul_add_instructions"], "instr")
        if not args.no_et:
            pte = et_mnist_pte(out)
            if pte is not None:
                r = mcu_gen.run(pte_path=pte, board="mps2-an505", out=out / "et_mnist", n_random=1)
                assert r.verified, "ExecuTorch's mnist .pte does not verify"
                add("(b) ExecuTorch's mnist fp32 .pte: instructions", r.instructions_per_inference,
                    "mnist_instructions", ET["mnist_instructions"], "instr")
        mnist = mcu_gen.build(ROOT / "examples" / "mnist" / "model.py", board="mps2-an505", out=out / "mnist")
        b = breakdown(mnist)
        f = b["flash"]
        add("(c) runtime_core flash", f["runtime_core"], "runtime_core", ET["runtime_core"])
        add("(d) mnist image without weights (code + .pte metadata)", b["flash_bytes"] - f["constants"], "image",
            ET["image"])
        add("(d') mnist code only (runtime, kernels, board/libc)", f["runtime_core"] + f["kernels"] + f["board"],
            "image", ET["image"])
        add("(e) runtime state in RAM (executors, server)", b["ram"]["runtime_state"], "runtime_state",
            ET["runtime_state"])
        if not args.no_pte:
            for name, et in ET["flatbuffer"].items():
                res = mcu_gen.build(ROOT / "examples" / name / "model.py", board="mps2-an505", out=out / name,
                                    compile=False)
                fb = pte_split(res.pte_bytes, res.program)["flatbuffer"]
                rows.append((f"(f) {name} .pte metadata (flatbuffer)", fb, et // 3, et, "B", fb <= et // 3))

    print("| target | measured | limit | ExecuTorch | ok |")
    print("|---|---:|---:|---:|---|")
    for name, value, limit, et, unit, ok in rows:
        def fmt(x):
            return "—" if x is None else f"{x:,}"

        print(f"| {name} | {fmt(value)} {unit} | {fmt(limit)} | {fmt(et)} | "
              f"{'—' if ok is None else ('yes' if ok else 'NO')} |")
    print()
    print("mnist (mcu-gen's .pte) size breakdown:\n")
    print(markdown_table(b))
    return 0 if all(ok is not False for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
