"""RV32 (QEMU rv32-virt, the Hazard3's ISA) against the Cortex-M33 (QEMU mps2-an505): instructions per
inference of the same program, every example, fp32 and int8.

    python bench/bench_riscv.py [--examples mnist,kws_dscnn] [--dtypes fp32,int8] [--no-zb] [--markdown]

Both boards run the same .pte (same export, quantization and memory plan) on mcu-gen's portable
kernels (`backend="portable"`: CMSIS-NN is Arm-only, so the int8 comparison is like for like), one
inference each, counted exactly under QEMU -icount (M33: SysTick ticks -> instructions; RV32:
minstret). Instructions are not cycles: QEMU models no pipeline, and an RV32 instruction does less
than a Thumb-2 one (no post-increment loads, no hardware floating point on the Hazard3: fp32 runs on
libgcc's soft float, while the M33 has an FPU). Columns: instructions on each core, RV32/M33, and the
flash of each image (code + program). `--no-zb` adds a column for the RV32 build without
Zba/Zbb/Zbkb (-march=rv32imac), which shows what those extensions buy in the kernels.
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen import boards
from mcu_gen.firmware import builder  # noqa: E402
from mcu_gen.device.runner import run  # noqa: E402

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]
PLAIN = "rv32-virt-plain"  # rv32-virt compiled for plain rv32imac (--no-zb)


def plain_board(tmp: Path):
    """rv32-virt with -march=rv32imac_zicsr_zifencei: the same board files, no Zb* code."""
    b = boards.get_board("rv32-virt")
    flags = tuple("-march=rv32imac_zicsr_zifencei" if f.startswith("-march=") else f for f in b.cflags)
    return dataclasses.replace(b, name=PLAIN, cflags=flags)


def measure(name: str, dtype: str, board: str, out: Path) -> dict:
    r = run(f"examples/{name}/model.py", board=board, quantize="int8" if dtype == "int8" else None,
            out=out / f"{name}-{dtype}-{board}", max_inputs=1, backend="portable", timeout=600.0)
    ok = r.bit_exact if dtype == "int8" else r.verified
    return {"ok": ok, "instructions": r.instructions_per_inference, "flash": r.flash_bytes}


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--dtypes", default="fp32,int8")
    ap.add_argument("--no-zb", action="store_true", help="also measure rv32-virt built for plain rv32imac")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-riscv-"))
    if args.no_zb:  # builder.build looks boards up by name: let it find the plain variant too
        plain, real = plain_board(tmp), builder.get_board
        builder.get_board = lambda n, *a, **k: plain if n == PLAIN else real(n, *a, **k)
    head = ["model", "dtype", "ok (M33/RV32)", "M33 instructions", "RV32 instructions", "RV32/M33",
            "M33 flash", "RV32 flash"]
    if args.no_zb:
        head += ["RV32 without Zb*", "Zb* saves"]
    rows = []
    try:
        for name in args.examples.split(","):
            for dtype in args.dtypes.split(","):
                m33 = measure(name, dtype, "mps2-an505", tmp)
                rv = measure(name, dtype, "rv32-virt", tmp)
                row = [name, dtype, f"{fmt(m33['ok'])}/{fmt(rv['ok'])}", m33["instructions"], rv["instructions"],
                       rv["instructions"] / m33["instructions"], m33["flash"], rv["flash"]]
                if args.no_zb:
                    base = measure(name, dtype, PLAIN, tmp)
                    row += [base["instructions"], f"{100 * (1 - rv['instructions'] / base['instructions']):.1f}%"]
                rows.append(row)
                print("  " + " ".join(fmt(v) for v in row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cells = [[fmt(v) for v in r] for r in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for c in cells:
            print("| " + " | ".join(c) + " |")
    else:
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for c in cells:
            print("  ".join(v.rjust(w) for v, w in zip(c, widths)))
    return 0 if all("NO" not in c[2] for c in cells) else 1


if __name__ == "__main__":
    sys.exit(main())
