"""Instructions per inference, portable int8 vs CMSIS-NN, per board and per example, with a
per-operator breakdown (RUN_PROFILED), beside ExecuTorch's int8 CMSIS-NN path and TFLite
Micro with CMSIS-NN (docs/DESIGN reference numbers, measured on the same QEMU boards).

    MCU_GEN_CMSIS_NN=/path/to/CMSIS-NN python bench/bench_cmsis_nn.py [--boards ...] [--examples ...]

Besides the five examples it always runs `adapter-cases` (tests/test_cmsis_nn.py: every
adapter on MNIST/KWS-like shapes, fallback cases included), which needs no quantizer.
Instructions are exact under QEMU -icount (docs/boards.md); they are not cycles.

"outside CMSIS-NN": the same firmware with every CMSIS-NN function stubbed out, i.e. the
executor, the adapters and the adapters' own kernel loops (the stacked-rows convolution of
few-channel inputs, cmsis_nn_conv.h). "runtime + adapters": the same, also built with
MCU_CMSIS_STACKED_CONV=0, i.e. without those loops.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.firmware import builder
from mcu_gen.backends import cmsis_nn  # noqa: E402
from mcu_gen.device.qemu import QemuSession  # noqa: E402

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]
BOARDS = ["mps2-an505", "mps3-an547", "mps2-an386"]
# Instructions per inference (DESIGN.md): ExecuTorch 1.5 cortex_m on CMSIS-NN, TFLM + CMSIS-NN.
PEERS = {
    ("mps2-an505", "mnist"): (1_405_313, 1_182_492), ("mps2-an505", "kws_dscnn"): (10_410_984, 7_683_634),
    ("mps2-an505", "ic_resnet8"): (None, 29_941_486), ("mps2-an505", "vww_mobilenet"): (None, 24_045_413),
    ("mps2-an505", "ad_autoencoder"): (None, 595_923),
    ("mps3-an547", "mnist"): (526_188, 425_728), ("mps3-an547", "kws_dscnn"): (2_530_866, 1_817_956),
    ("mps3-an547", "ic_resnet8"): (None, 4_908_389), ("mps3-an547", "vww_mobilenet"): (None, 6_557_366),
    ("mps3-an547", "ad_autoencoder"): (None, 291_232),
}


def adapter_program():
    sys.path.insert(0, str(ROOT / "tests"))
    from test_cmsis_nn import adapter_cases  # noqa: E402

    return adapter_cases()


def build(example: str, board: str, backend: str, out: Path):
    if example == "adapter-cases":
        from mcu_gen.plan import inplace_pass
        from mcu_gen.program import pte

        p = adapter_program()
        inplace_pass.plan_memory(p)
        (out / "cases.pte").write_bytes(pte.write(p))
        return builder.build(pte_path=out / "cases.pte", board=board, out=out / f"{board}-{backend}", backend=backend)
    return builder.build(ROOT / "examples" / example / "model.py", board=board, out=out / f"{example}-{board}-{backend}",
                         quantize="int8", io="int8", backend=backend)


def measure(r) -> tuple[int, list]:
    """(instructions of a whole inference, [(op, instructions)] per instruction)."""
    import numpy as np

    with QemuSession(r.board, r.elf) as link:
        link.hello()
        for i, idx in enumerate(r.program.inputs):
            t = r.program.tensor(idx)
            link.write_input(i, np.zeros(t.nbytes, np.uint8).tobytes())
        status, ticks = link.run()
        if status != 0:
            raise RuntimeError(f"RUN status {status}")
        total = r.board.instructions_from_ticks(ticks)
        try:
            per, _ = link.run_profiled()
            ops = [(ins.op, r.board.instructions_from_ticks(t)) for ins, t in zip(r.program.instructions, per)]
        except Exception:  # firmware without RUN_PROFILED: whole inference only
            ops = []
    return total, ops


def outside_cmsis_nn(r, tmp: Path, stacked: bool = True) -> tuple[int, list]:
    """Instructions outside CMSIS-NN (executor, runtime, adapters, portable kernels): the same
    firmware rebuilt with every CMSIS-NN function the adapters call replaced by a stub that
    returns 0 (success; buffer size 0) and measured the same way. The adapters take the same
    paths (they never read CMSIS-NN's outputs), so what is left is exactly the code outside
    CMSIS-NN, plus 2 instructions per stub call (mov, bx), which are counted as outside.
    ``stacked=False`` also builds with MCU_CMSIS_STACKED_CONV=0, so the few-channel convolutions
    take CMSIS-NN's (stubbed) paths instead of the adapter's own stacked-rows loops
    (cmsis_nn_conv.h): what is left is the runtime and the adapters alone."""
    import re
    import shutil

    from mcu_gen.firmware import toolchain

    src = r.out / "firmware"
    proj = tmp / (r.out.name + ("-stubbed" if stacked else "-stubbed-runtime"))
    if proj.exists():
        shutil.rmtree(proj)
    shutil.copytree(src, proj, ignore=shutil.ignore_patterns("build"))
    called = set()
    for f in list((proj / "kernels").glob("*.cpp")) + list((proj / "kernels").glob("*.h")):
        called |= set(cmsis_nn._CALL.findall(cmsis_nn._strip_comments(f.read_text())))
    defined = set(cmsis_nn.source_index(proj / "cmsis_nn"))
    stubs = sorted(called & defined)
    (proj / "cmsis_nn_stubs.c").write_text(
        "/* CMSIS-NN replaced by stubs: what remains is the code outside it. */\n"
        + "".join(f"int {name}(void) {{ return 0; }}\n" for name in stubs))
    cm = (proj / "CMakeLists.txt").read_text()
    cm = re.sub(r"^\s*cmsis_nn/Source/\S+\n", "", cm, flags=re.M)
    cm = cm.replace("add_executable(firmware.elf\n", "add_executable(firmware.elf\n  cmsis_nn_stubs.c\n", 1)
    if not stacked:
        cm = cm.replace("target_compile_definitions(firmware.elf PRIVATE\n",
                        "target_compile_definitions(firmware.elf PRIVATE\n  MCU_CMSIS_STACKED_CONV=0\n", 1)
        assert "MCU_CMSIS_STACKED_CONV=0" in cm, "CMakeLists.txt layout changed"
    (proj / "CMakeLists.txt").write_text(cm)
    elf = toolchain.cmake_build(proj, proj / "build")
    return measure(type(r)(out=proj, board=r.board, program=r.program, pte_bytes=r.pte_bytes, report=r.report,
                           elf=elf))


def by_operator(ops) -> dict:
    """op name -> instructions; the portable in-place variants count as their operator."""
    from mcu_gen.backends import kernels

    variant_of = {k.op: k.variant_of for k in kernels.find_kernels().values() if k.variant_of}
    out = defaultdict(int)
    for op, n in ops:
        out[variant_of.get(op, op).split("::")[-1].rsplit(".", 1)[0]] += n
    return dict(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boards", nargs="*", default=BOARDS)
    ap.add_argument("--examples", nargs="*", default=["adapter-cases"] + EXAMPLES)
    ap.add_argument("--cmsis-nn", default=None, help="CMSIS-NN root (else $MCU_GEN_CMSIS_NN)")
    args = ap.parse_args()
    root, how = cmsis_nn.locate(args.cmsis_nn, use_pack_manager=False)
    if root is None:
        print(f"CMSIS-NN not found ({how}); {cmsis_nn.HOW_TO_PROVIDE}")
        return 2
    import os

    os.environ[cmsis_nn.ENV_VAR] = str(root)
    from mcu_gen.firmware import platformio_project

    platformio_project._render_test = lambda *a, **k: None  # no PlatformIO test vectors needed here
    print(f"CMSIS-NN: {how}\n")
    print("| board | example | portable int8 | CMSIS-NN | speed-up | outside CMSIS-NN | runtime + adapters | "
          "ExecuTorch int8 | TFLM+CMSIS-NN | vs best peer |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    details = []
    with tempfile.TemporaryDirectory(prefix="bench-cmsis-") as tmp:
        tmp = Path(tmp)
        for board in args.boards:
            for ex in args.examples:
                row = {}
                for backend in ("portable", "cmsis-nn"):
                    try:
                        r = build(ex, board, backend, tmp)
                        row[backend] = measure(r)
                        if backend == "cmsis-nn":
                            row["outside"] = outside_cmsis_nn(r, tmp)
                            row["runtime"] = outside_cmsis_nn(r, tmp, stacked=False)
                    except Exception as e:  # noqa: BLE001  report and go on
                        row[backend] = (None, [])
                        row[backend + "_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
                        if os.environ.get("BENCH_TRACE"):
                            traceback.print_exc()
                p, c = row["portable"][0], row["cmsis-nn"][0]
                et, tf = PEERS.get((board, ex), (None, None))
                best = min(x for x in (et, tf) if x) if (et or tf) else None
                fmt = lambda n: f"{n:,}" if n else "n/a"  # noqa: E731
                speed = f"{p / c:.2f}x" if p and c else ""
                vs = f"{c / best:.3f}x" if c and best else ""
                o = row.get("outside", (None, []))[0]
                outside = f"{o:,} ({o / c:.2%})" if o and c else "n/a"
                rt = row.get("runtime", (None, []))[0]
                runtime = f"{rt:,} ({rt / c:.2%})" if rt and c else "n/a"
                print(f"| {board} | {ex} | {fmt(p)} | {fmt(c)} | {speed} | {outside} | {runtime} | {fmt(et)} | "
                      f"{fmt(tf)} | {vs} |", flush=True)
                details.append((board, ex, row))
    print()
    for board, ex, row in details:
        for key in ("portable_error", "cmsis-nn_error"):
            if key in row:
                print(f"{board} {ex} {key.split('_')[0]}: {row[key]}")
        if row["cmsis-nn"][1] and row["portable"][1]:
            pc, cc = by_operator(row["portable"][1]), by_operator(row["cmsis-nn"][1])
            oc = by_operator(row.get("outside", (None, []))[1])
            print(f"\n{board} / {ex}: instructions per operator: portable -> CMSIS-NN (of which outside CMSIS-NN)")
            for op in sorted(cc, key=lambda k: -cc[k]):
                print(f"  {op:40s} {pc.get(op, 0):>12,} -> {cc[op]:>12,} ({oc.get(op, 0):,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
