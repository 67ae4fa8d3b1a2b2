"""Arena size per example, fp32 and int8 (--io int8): ours vs the layer-wise lower bound vs the peers.

    python bench/bench_memory.py [--examples mnist,kws_dscnn] [--no-int8] [--plans DIR] [--total] [--no-lean]

Columns: our planned arena (in-place on), the layer-wise lower bound of the
graph as exported (most bytes live at one step, no in-place: in-place can go
below it), ExecuTorch 1.5.1's planned arena for the same network (../shared/DESIGN.md;
int8 = its Cortex-M4 figure, fp32 = portable), TFLM's activation head (int8 I/O,
fp32 rows: none), our arena / ExecuTorch's, the instructions that set our peak
and the placement strategy that won. No emulator is needed: the plan is the
same one the firmware build embeds. ``--plans DIR`` also writes each plan as
SVG and PNG.

``--total`` also runs every example on QEMU mps2-an505 (`mcu-gen run`: the
deployable image, its stack bounded from the image's code at build time and
reserved as that bound + margin, checked against the high-water mark measured on
the device, no upload buffer), once as the default build (no flags) and once as
the lean library build (`--kernels library --backend portable`; `--no-lean`
skips it), and prints its total RAM (.data + .bss + reserved stack, from the
ELF) by component and its instructions per inference beside ExecuTorch's and TFLM's totals
(../shared/DESIGN.md): ExecuTorch = its plan + method allocator + kernel
registry + .data + peak stack as measured on the same board (only MNIST and
KWS have all of them), and its paper's Pico 2 figures; TFLM = its whole arena
(activations + persistent runtime data; its stack and .bss come on top).
The total counts every RAM region of the board (a plan over several regions
included).

``--regions ROOM`` (e.g. ``16K``) runs every int8 example on QEMU mps3-an547
(Cortex-M55: DTCM, speed 1, and the FPGA SRAM, speed 2) with ROOM bytes of DTCM
for the arena (``--ram-regions dtcm=ROOM``), and prints the bytes the planner
placed in each region, the share of the predicted accesses (bytes read +
written per inference) each serves, whether the outputs are still bit-exact
and the total RAM per region. QEMU does not time memories: instructions per
inference are the same as with one region.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.plan import picture as plan_report  # noqa: E402
from mcu_gen.firmware.builder import load_program  # noqa: E402

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]
ET_FP32 = {"mnist": 43_264, "kws_dscnn": 64_000, "ic_resnet8": 196_608, "vww_mobilenet": 294_912,
           "ad_autoencoder": 330_752}
ET_INT8 = {"mnist": 6_768, "kws_dscnn": 16_000, "ic_resnet8": 49_728, "vww_mobilenet": 138_240,
           "ad_autoencoder": 3_200}
TFLM_INT8_HEAD = {"mnist": 6_768, "kws_dscnn": 16_000, "ic_resnet8": 49_152, "vww_mobilenet": 73_728,
                  "ad_autoencoder": 768}


def measure(name: str, quantize, plans: Path | None) -> dict:
    t0 = time.monotonic()
    kw = {"quantize": "int8", "io": "int8"} if quantize else {}
    program, _, _ = load_program(ROOT / "examples" / name / "model.py", **kw)
    s = plan_report.summary(program)
    if plans is not None:
        plans.mkdir(parents=True, exist_ok=True)
        stem = f"{name}-{'int8' if quantize else 'fp32'}"
        plan_report.write_svg(program, plans / f"{stem}.svg")
        plan_report.write_png(program, plans / f"{stem}.png")
    et = (ET_INT8 if quantize else ET_FP32).get(name)
    return {
        "model": name, "dtype": "int8" if quantize else "fp32", "arena": program.arena_size,
        "lower_bound": s["lower_bound_bytes"], "et": et, "tflm": TFLM_INT8_HEAD.get(name) if quantize else None,
        "ratio": program.arena_size / et if et else None,
        "peak": ", ".join(f"{p['step']}:{p['op'].split('::')[-1].rsplit('.', 1)[0]}" for p in s["peak_ops"]),
        "inplace": len(s["inplace"]), "strategy": s["strategy"], "seconds": time.monotonic() - t0,
    }


# ExecuTorch's total RAM besides nothing: plan + method allocator + kernel registry + .data + stack (DESIGN.md).
ET_TOTAL = {("mnist", "fp32"): 43_264 + 3_132 + 900 + 2_500,
            ("mnist", "int8"): 6_768 + 4_348 + 768 + 700 + 2_100,
            ("kws_dscnn", "int8"): 16_000 + 11_496 + 768 + 700 + 2_100}
ET_PAPER = {("mnist", "fp32"): 108 * 1024, ("mnist", "int8"): 11 * 1024}  # MLSys 2026, Pico 2, "~"
TFLM_ARENA = {("mnist", "int8"): 8_084, ("kws_dscnn", "int8"): 22_756, ("ic_resnet8", "int8"): 54_212,
              ("vww_mobilenet", "int8"): 100_468, ("ad_autoencoder", "int8"): 15_620}


# The builds --total measures: (name, mcu_gen.run keyword arguments).
BUILDS = [("default", {}), ("lean", {"kernels": "library", "backend": "portable"})]


def measure_total(name: str, quantize: bool, out: Path, build: str = "default") -> dict:
    import mcu_gen

    kw = {"quantize": "int8", "io": "int8"} if quantize else {}
    kw.update(dict(BUILDS)[build])
    r = mcu_gen.run(ROOT / "examples" / name / "model.py", board="mps2-an505", out=out / name / build,
                    n_random=1, max_inputs=1, **kw)
    assert r.verified, f"{name} does not verify"
    return {"model": name, "dtype": "int8" if quantize else "fp32", "build": build, "ram": r.ram,
            "total": r.ram_bytes, "stack_used": r.stack_used_bytes, "stack_reserved": r.stack_reserved_bytes,
            "instructions": r.instructions_per_inference}


def print_totals(rows: list) -> None:
    print()
    print("Total RAM of the deployable image (QEMU mps2-an505, stack bounded at build time, measured on the device):")
    print()
    print("| model | dtype | build | arena | runtime state | frames | stack used / reserved | other | **total RAM** | "
          "instructions | ExecuTorch total (same board) | ExecuTorch paper (Pico 2) | TFLM arena alone |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in rows:
        ram, key = t["ram"], (t["model"], t["dtype"])
        other = ram.get("board", 0) + ram.get("upload_buffer", 0)
        print(f"| {t['model']} | {t['dtype']} | {t['build']} | {fmt(ram['arena'])} | {fmt(ram['runtime_state'])} | "
              f"{fmt(ram['protocol_io'])} | {fmt(t['stack_used'])} / {fmt(t['stack_reserved'])} | {fmt(other)} | "
              f"**{fmt(t['total'])}** | {fmt(t['instructions'])} | {fmt(ET_TOTAL.get(key))} | "
              f"{fmt(ET_PAPER.get(key))} | {fmt(TFLM_ARENA.get(key))} |")


def measure_regions(name: str, room: str, out: Path) -> dict:
    import mcu_gen
    from mcu_gen.firmware.report import load_report

    r = mcu_gen.run(ROOT / "examples" / name / "model.py", board="mps3-an547", out=out / name, n_random=1,
                    max_inputs=1, quantize="int8", io="int8", backend="portable", ram_regions=f"dtcm={room}")
    rep = load_report(r.out)
    return {"model": name, "bit_exact": r.bit_exact, "instructions": r.instructions_per_inference,
            "regions": rep.get("ram_regions", []), "linked": (rep.get("size") or {}).get("ram_regions", {}),
            "total": r.ram_bytes}


def print_regions(rows: list, room: str) -> None:
    print()
    print(f"int8 on QEMU mps3-an547 with {room} of DTCM for the arena (--ram-regions dtcm={room}): "
          "bytes placed per region, predicted access share, bit-exact:")
    print()
    print("| model | DTCM arena | SRAM arena | DTCM share of predicted accesses | bit-exact | instructions | "
          "RAM in DTCM / SRAM | total RAM |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for t in rows:
        g = {x["name"]: x for x in t["regions"]}
        d, m = g.get("dtcm", {}), g.get("sram", {})
        print(f"| {t['model']} | {fmt(d.get('arena_bytes'))} | {fmt(m.get('arena_bytes', 0))} | "
              f"{d.get('access_share', 1.0):.1%} | {'yes' if t['bit_exact'] else 'NO'} | {fmt(t['instructions'])} | "
              f"{fmt(t['linked'].get('dtcm'))} / {fmt(t['linked'].get('sram'))} | {fmt(t['total'])} |")


def fmt(x):
    return "—" if x is None else f"{x:,}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--no-int8", action="store_true")
    ap.add_argument("--plans", type=Path, default=None, help="write <model>-<dtype>.svg/.png here")
    ap.add_argument("--total", action="store_true", help="also run on QEMU and print total RAM (needs qemu)")
    ap.add_argument("--no-lean", action="store_true", help="--total: the default build only")
    ap.add_argument("--regions", metavar="ROOM", default=None,
                    help="also run int8 on QEMU mps3-an547 with ROOM (e.g. 16K) of DTCM for the arena")
    args = ap.parse_args()
    rows = []
    for name in args.examples.split(","):
        for q in ([False] if args.no_int8 else [False, True]):
            rows.append(measure(name, q, args.plans))
            print(f"  {name} {rows[-1]['dtype']}: {rows[-1]['seconds']:.1f} s", file=sys.stderr)
    print("| model | dtype | arena B | layer-wise lower bound B | ExecuTorch B | TFLM head B | arena / ET | "
          "in-place ops | peak at (step:op) | strategy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "—"
        print(f"| {r['model']} | {r['dtype']} | {fmt(r['arena'])} | {fmt(r['lower_bound'])} | {fmt(r['et'])} | "
              f"{fmt(r['tflm'])} | {ratio} | {r['inplace']} | {r['peak']} | {r['strategy']} |")
    if args.total:
        import tempfile

        totals = []
        with tempfile.TemporaryDirectory(prefix="mcu-ram-") as tmp:
            for name in args.examples.split(","):
                for q in ([False] if args.no_int8 else [False, True]):
                    for build in [b for b, _ in BUILDS][:1 if args.no_lean else None]:
                        t0 = time.monotonic()
                        totals.append(measure_total(name, q, Path(tmp) / ("int8" if q else "fp32"), build))
                        print(f"  {name} {totals[-1]['dtype']} {build} on QEMU: {time.monotonic() - t0:.1f} s",
                              file=sys.stderr)
        print_totals(totals)
    if args.regions:
        import tempfile

        split = []
        with tempfile.TemporaryDirectory(prefix="mcu-regions-") as tmp:
            for name in args.examples.split(","):
                t0 = time.monotonic()
                split.append(measure_regions(name, args.regions, Path(tmp)))
                print(f"  {name} int8 over two regions on QEMU: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        print_regions(split, args.regions)


if __name__ == "__main__":
    main()
