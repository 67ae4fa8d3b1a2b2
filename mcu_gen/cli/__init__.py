"""The `mcu-gen` command line. Every command has a Python API twin (mcu_gen.build, mcu_gen.run, ...)."""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import warnings
from pathlib import Path

from mcu_gen.errors import McuGenError
from mcu_gen.cli.options import add_calibration_options, add_kernel_options, calibration_options, print_calibration
from mcu_gen.progress import quiet


def _err(msg: str) -> int:
    print(f"mcu-gen: error: {msg}", file=sys.stderr)
    return 1


def cmd_boards(args) -> int:
    from mcu_gen.boards import get_board, list_boards

    rows = []
    for name in list_boards():
        b = get_board(name)
        emu = f"qemu {b.emulator.machine}" if b.is_qemu else b.emulator.kind
        feats = "+".join(f for f, on in (("fpu", b.fpu), ("dsp", b.dsp), ("mve", b.mve), ("npu", b.npu)) if on)
        regions = b.ram_regions
        ram = (f"{b.ram.size // 1024} KiB" if len(regions) == 1 else
               " + ".join(f"{r.name} {r.size // 1024} KiB" for r in regions))
        flash = f"{b.flash.size // 1024} KiB"
        if b.is_native:  # no flash and RAM of its own: the build machine's process
            flash = ram = "this machine's"
        rows.append((b.name, f"{b.core} {feats}".strip(), flash, ram, emu, b.flash_method,
                     [{"name": r.name, "base": r.base, "size": r.size, "speed": r.speed} for r in regions]))
    if args.json:
        keys = ("board", "core", "flash", "ram", "emulator", "flash_method", "ram_regions")
        print(json.dumps([dict(zip(keys, r)) for r in rows], indent=2))
        return 0
    rows = [r[:-1] for r in rows]
    header = ("board", "core", "flash", "ram", "emulator", "flash method")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for r in (header, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    return 0


def cmd_build(args) -> int:
    from mcu_gen.firmware.builder import build

    r = build(args.model, board=args.board, pte_path=args.pte, out=args.out, fuse=not args.no_fuse,
              quantize=args.quantize, io=args.io, calibration=args.calibration, framework=args.framework,
              backend=args.backend, cmsis_nn_path=args.cmsis_nn, npu=args.npu, ethos_u_driver=args.ethos_u_driver,
              value_cache=args.value_cache, upload=args.upload, frame_bytes=args.frame_bytes,
              stack_bytes=args.stack_bytes, kernels=args.kernels, ram_regions=args.ram_regions,
              arena_region=args.arena_region, **calibration_options(args))
    rep = r.report
    if args.json:
        print(json.dumps(rep, indent=2))
    else:
        print(f"built {rep['model']} for {rep['board']} in {r.out}")
        print(f"  arena {rep['arena_bytes']:,} B (lower bound without in-place {rep['arena_lower_bound_bytes']:,} B), "
              f".pte {rep['pte_bytes']:,} B, flash {rep['flash_bytes']:,} B, RAM {rep['ram_bytes']:,} B")
        for g in rep.get("ram_regions", []):
            print(f"  RAM region {g['name']} (memory {g['memory_id']}, speed {g['speed']}): arena {g['arena_bytes']:,} B "
                  f"of {g['budget_bytes']:,} B room, {g['buffers']} tensor buffers, "
                  f"{g['access_share']:.1%} of predicted accesses")
        print(f"  {len(rep['operators'])} instructions, kernels: {', '.join(rep['kernels'])}")
        _print_static_stack(rep)
        _print_generated_hint(rep)
        _print_quant(rep)
        _print_npu(rep)
        if (r.out / "firmware.uf2").is_file():
            print(f"  {r.out / 'firmware.uf2'}: copy it onto the board in BOOTSEL mode, or `mcu-gen flash`")
    return 0


def _print_quant(rep: dict) -> None:
    if not rep.get("quantize"):
        return
    for kind in ("inputs", "outputs"):
        for k, t in enumerate(rep[kind]):
            if "scale" in t:
                print(f"  {kind[:-1]} {k}: int8 {t['shape']}, scale {t['scale']:.6g}, zero point {t['zero_point']}")
    for f in rep.get("fp32_fallback", []):
        print(f"  fp32 fallback: {f['op']} ({f['reason']})")
    print_calibration(rep.get("calibration"))


def _print_npu(rep: dict) -> None:
    e = rep.get("ethos_u")
    if not e:
        return
    print(f"  {e['npu']}: {e['npu_operators']} operators on the NPU in {len(e['subgraphs'])} delegate(s), "
          f"{e['cpu_operators']} on the CPU; Vela: {e['vela_cycles_total']:,} cycles, "
          f"scratch {e['vela_scratch_bytes']:,} B")
    for c in e.get("cpu", []):
        print(f"  CPU: {c['op']} ({c['reason']})")


def _print_generated_hint(rep) -> None:
    """A build on library kernels whose layers the core could run on generated ones says so."""
    from mcu_gen.firmware.flash_fit import left_count
    from mcu_gen.firmware.report import generated_hint

    if not isinstance(rep, dict):  # a run's output directory
        from mcu_gen.firmware.report import load_report

        rep = load_report(Path(rep)) if rep else {}
    n = (rep.get("generated_kernels") or {}).get("available_layers")
    if n:
        print(f"  hint: {generated_hint(n)}")
    left = left_count(rep)
    if left:
        print(f"  flash: {left} layer(s) left to the library kernels, the image did not fit {rep['board']}'s flash "
              "with them generated (report.md, \"Generated kernels\", names each)")


def cmd_run(args) -> int:
    if args.npu:
        return _err(f"--npu {args.npu}: no emulator here models an Ethos-U NPU (QEMU has none), so `run` cannot "
                    f"verify NPU firmware; use `mcu-gen build --board corstone-300 --npu {args.npu}` and run "
                    "firmware.elf on Arm's FVP_Corstone_SSE-300_Ethos-U55 or hardware (docs/ethos_u.md)")
    from mcu_gen.progress import for_cli
    from mcu_gen.device.runner import run

    bar = for_cli(args, "inferences")  # quiet with --json or when stderr is not a terminal
    r = run(args.model, board=args.board, pte_path=args.pte, out=args.out, fuse=not args.no_fuse,
            n_random=args.n, timeout=args.timeout, quantize=args.quantize, io=args.io, calibration=args.calibration,
            progress=bar, backend=args.backend, cmsis_nn_path=args.cmsis_nn, value_cache=args.value_cache,
             upload=args.upload, frame_bytes=args.frame_bytes, kernels=args.kernels, cycles=args.cycles,
             methods=args.method, ram_regions=args.ram_regions, arena_region=args.arena_region,
             **calibration_options(args))
    bar.done()
    if args.json:
        gate = int8_error_gate(r, getattr(args, "max_int8_error", None))
        d = r.to_json()
        if gate is not None:
            d["int8_error_gate"] = {"max_abs_error": getattr(args, "max_int8_error"), "failed": gate[0],
                                    "message": gate[1]}
        print(json.dumps(d, indent=2))
        if r.verified and gate is not None and gate[0]:
            return 3
    elif r.quantize:
        status = "BIT-EXACT" if r.bit_exact else "MISMATCH"
        print(f"{status}: {r.n_inferences} inference(s) on {r.board}, device {r.quantize} outputs vs the host "
              f"integer reference (I/O {r.io})")
        top1 = f", top-1 agreement {r.top1_agreement:.0%}" if r.top1_agreement is not None else ""
        print(f"  quantization error vs fp32: max abs {r.quant_max_abs_error:.3g}{top1}"
              + (f", RMS {_rms(r):.3g}" if _rms(r) is not None else ""))
        print(f"  inputs: {r.inputs_used}")
        print_calibration(r.calibration)
        _print_state(r)
        _print_count(r)
        _print_cycles(r)
        print(f"  arena {r.arena_bytes:,} B (lower bound without in-place {r.arena_lower_bound_bytes:,} B), .pte {r.pte_bytes:,} B, "
              f"flash {r.flash_bytes:,} B, RAM {r.ram_bytes:,} B")
        _print_stack(r)
        _print_generated_hint(r.out)
        gate = int8_error_gate(r, getattr(args, "max_int8_error", None))
        if gate is not None:
            print(f"  {gate[1]}")
            if r.verified and gate[0]:
                return 3
    else:
        status = "VERIFIED" if r.verified else "MISMATCH"
        print(f"{status}: {r.n_inferences} inference(s) on {r.board}, max abs error {r.max_abs_error:.3g} "
              f"(tolerance {r.tolerance:.3g}, against {r.reference})")
        print(f"  inputs: {r.inputs_used}")
        _print_state(r)
        from mcu_gen.boards import get_board

        unit = "ns (the native process's time)" if get_board(r.board).is_native else "instructions"
        for m in r.methods:
            print(f"  method {m['name']}: {'verified' if m['verified'] else 'MISMATCH'}, {m['calls']} call(s), "
                  f"max abs error {m['max_abs_error']:.3g}, {m['instructions'] or 0:,} {unit} per call, "
                  f"{m['select_instructions'] or 0:,} to select it")
        if r.methods and r.reset_identical is not None:
            reset = "identical" if r.reset_identical else "DIFFERENT"
            print(f"  shared state {r.state_bytes:,} B: after RESET the same calls gave {reset} outputs")
        _print_count(r)
        _print_cycles(r)
        print(f"  arena {r.arena_bytes:,} B (lower bound without in-place {r.arena_lower_bound_bytes:,} B), .pte {r.pte_bytes:,} B, "
              f"flash {r.flash_bytes:,} B, RAM {r.ram_bytes:,} B")
        _print_stack(r)
        _print_generated_hint(r.out)
    return 0 if r.verified else 2


def int8_error_gate(r, limit):
    """`run --max-int8-error X`: (failed, line) when the gate is asked for, else None. It fails when the
    error of the device's outputs against the fp32 model is above X, or when there is no such error
    (no fp32 model to compare with, e.g. --pte): a gate that cannot be measured does not pass."""
    if limit is None:
        return None
    if not r.quantize:
        return False, f"--max-int8-error {limit:g}: not an int8 build, nothing to gate"
    err = r.quant_max_abs_error
    if err is None:
        return True, (f"INT8 ERROR NOT MEASURED: --max-int8-error {limit:g} asked for, but there is no fp32 model "
                      "to compare the outputs with")
    if err > limit:
        return True, f"INT8 ERROR ABOVE GATE: max abs error vs fp32 {err:.4g} > --max-int8-error {limit:g}"
    return False, f"int8 error gate passed: max abs error vs fp32 {err:.4g} <= --max-int8-error {limit:g}"


def _rms(r):
    rows = r.quant_output_errors or []
    return max((row["rms_error"] for row in rows), default=None)


def _print_count(r) -> None:
    if r.instructions_per_inference is not None:
        print(f"  instructions per inference: {r.instructions_per_inference:,}")
    elif r.native_ns_per_inference is not None:
        print(f"  time per inference in the native process: {r.native_ns_per_inference / 1e3:,.1f} us (this "
              "machine's wall clock, not a device figure)")


def _print_cycles(r) -> None:
    if r.estimated_cycles_per_inference is not None:
        lo, hi = r.estimated_cycles_range
        print(f"  estimated cycles per inference: {r.estimated_cycles_per_inference:,} ({lo:,} to {hi:,}), "
              f"{r.estimated_ms_per_inference:.3g} ms at {r.clock_hz / 1e6:g} MHz ({r.cycle_model})")
        print(f"  the estimate assumes: {r.cycle_assumptions}")
    elif r.cycles_unavailable:
        print(f"  no cycle estimate: {r.cycles_unavailable}")


def _print_state(r) -> None:
    if r.n_sequences:
        reset = "identical" if r.reset_identical else "DIFFERENT"
        print(f"  state {r.state_bytes:,} B: {r.n_inferences} steps in {r.n_sequences} sequence(s), each "
              f"compared step by step; after RESET the same sequence gave {reset} outputs")


def _print_static_stack(rep: dict) -> None:
    st = rep.get("stack") or {}
    if st.get("static_bound_bytes") is not None:
        print(f"  stack: {st['reserved_bytes']:,} B reserved for a static bound of {st['static_bound_bytes']:,} B "
              "(the deepest call path of the image's code plus one exception)")
    elif st.get("unbounded_reason"):
        print(f"  stack: {st['reserved_bytes']:,} B reserved (the linker script's default): no static bound, "
              f"{st['unbounded_reason']}; `mcu-gen run` measures it")


def _print_stack(r) -> None:
    if r.stack_used_bytes:
        print(f"  stack: {r.stack_used_bytes:,} B used (measured on the device), {r.stack_reserved_bytes:,} B "
              f"reserved; RAM {r.ram_bytes:,} B is the deployable image's"
              + (" (with its upload buffer, --upload)" if r.upload else ""))


def cmd_inspect(args) -> int:
    from mcu_gen.plan import planner
    from mcu_gen.program.ir import TensorValue

    data = Path(args.pte).read_bytes()
    from mcu_gen.plan.views import read_program

    p = read_program(data)
    if args.plan or args.plan_svg or args.plan_png:
        return _inspect_plan(args, p)
    iv = planner.lifetimes(p)
    lb = planner.lower_bound(iv.values())
    info = {
        "pte_bytes": len(data),
        "flatbuffer_bytes": p.meta["flatbuffer_bytes"],
        "constant_bytes": p.constant_bytes(),
        "arena_bytes": p.arena_size,
        "arena_lower_bound_bytes": lb,
        "operators": p.operators,
        "instructions": [{"op": i.op, "args": i.args} for i in p.instructions],
        "inputs": p.inputs,
        "outputs": p.outputs,
        "methods": [{"name": m.name, "instructions": len(m.instructions), "arena_bytes": m.arena_size,
                     "inputs": m.inputs, "outputs": m.outputs} for m in p.methods],
        "tensors": [
            {"value": i, "shape": list(v.shape), "dtype": v.dtype, "bytes": v.nbytes,
             "place": "constant" if v.is_constant else
             (f"arena+{v.offset}" if v.mem_id == 1 else f"arena{v.mem_id}+{v.offset}")}
            for i, v in enumerate(p.values) if isinstance(v, TensorValue)
        ],
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{args.pte}: {len(data):,} bytes (program {info['flatbuffer_bytes']:,}, constants {info['constant_bytes']:,})")
    print(f"arena {p.arena_size:,} bytes, lower bound without in-place {lb:,} bytes")
    print(f"operators ({len(p.operators)}): " + ", ".join(p.operators))
    if p.more_methods:
        print(f"methods ({len(p.methods)}; shown: {p.name}): " + ", ".join(
            f"{m.name} ({len(m.instructions)} instructions, arena {m.arena_size:,} B, {len(m.inputs)} in, "
            f"{len(m.outputs)} out)" for m in p.methods))
    print("instructions:")
    for k, ins in enumerate(p.instructions):
        print(f"  {k:3d} {ins.op}({', '.join(map(str, ins.args))})")
    print("tensors:")
    for t in info["tensors"]:
        io = " input" if t["value"] in p.inputs else (" output" if t["value"] in p.outputs else "")
        print(f"  v{t['value']:<4d} {t['dtype']:8s} {str(tuple(t['shape'])):20s} {t['bytes']:>9,} B  {t['place']}{io}")
    return 0


def _inspect_plan(args, program) -> int:
    from mcu_gen.plan import picture as plan_report

    if args.plan_svg:
        plan_report.write_svg(program, args.plan_svg)
    if args.plan_png:
        plan_report.write_png(program, args.plan_png)
    if args.json:
        print(json.dumps({"summary": plan_report.summary(program), "tensors": plan_report.rows(program)}, indent=2))
    elif args.plan or not (args.plan_svg or args.plan_png):
        print(plan_report.text(program), end="")
    return 0


def cmd_kernels(args) -> int:
    from mcu_gen.backends import operator_table

    print(operator_table.markdown() if args.markdown else operator_table.text(), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcu-gen", description="PyTorch model -> verified microcontroller firmware")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("boards", help="list boards: core, memory, emulator, flash method")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_boards)

    for name, fn, helptext in (("build", cmd_build, "build firmware for a model or a .pte"),
                               ("run", cmd_run, "build, run on the emulated board and verify against PyTorch (fp32) or the host integer reference (int8)")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--board", default="mps2-an505")
        src = s.add_mutually_exclusive_group(required=True)
        src.add_argument("--model", help="model file (.py defining model() and example_inputs(), or a .pt2)")
        src.add_argument("--pte", help="a program exported elsewhere (ExecuTorch .pte)")
        s.add_argument("--out", help="output directory (default mcu-gen-out/<model>-<board>)")
        s.add_argument("--no-fuse", action="store_true",
                       help="standard ATen operators only (the .pte then also runs in ExecuTorch's runtime)")
        s.add_argument("--quantize", choices=["int8"], default=None,
                       help="quantize the model to int8 (TFLite/CMSIS-NN spec) with its calibration data")
        s.add_argument("--io", choices=["float32", "int8"], default="float32",
                       help="dtype of the firmware's inputs/outputs with --quantize (int8: the host (de)quantizes)")
        s.add_argument("--calibration", default=None,
                       help="torch.save'd list of input tuples (default: the model file's calibration_inputs())")
        add_calibration_options(s)
        add_kernel_options(s)
        s.add_argument("--value-cache", dest="value_cache", metavar="N|all", default=None,
                       help="program values the runtime decodes once at load (20 bytes of RAM each; default: all "
                            "with CMSIS-NN kernels, else 8); the rest are decoded on every use")
        s.add_argument("--npu", default=None, metavar="CONFIG",
                       help="run the int8 model's supported operators on an Arm Ethos-U NPU: ethos-u55-{32,64,128,256}, "
                            "ethos-u65-{256,512}, ethos-u85-{128..2048} (board corstone-300; needs --quantize int8 "
                            "and the ethos-u extra)")
        s.add_argument("--ethos-u-driver", dest="ethos_u_driver", metavar="PATH", default=None,
                       help="Arm's ethos-u-core-driver checkout or unpacked pack (else $MCU_GEN_ETHOS_U_DRIVER, "
                            "cmsis-pack-manager)")
        s.add_argument("--upload", action="store_true",
                       help="give the firmware a program-upload buffer (LOAD_PROGRAM: model updates over the "
                            "serial link; as large as the program); a deployable image has none by default")
        s.add_argument("--frame-bytes", dest="frame_bytes", type=int, default=None, metavar="N",
                       help="verify-protocol frame payload, 128..1024 (default: the largest input/output "
                            "transfer + 8, at most 128); transfers are chunked to it")
        s.add_argument("--ram-regions", dest="ram_regions", default=None, metavar="NAME=BYTES,...",
                       help="room for the arena per RAM region of the board (e.g. dtcm=16K,sram=1M; K/M suffixes): "
                            "the planner puts the most-accessed tensors in the fastest region that has room "
                            "(`mcu-gen boards --json` lists the regions)")
        s.add_argument("--arena-region", dest="arena_region", default=None, metavar="NAME",
                       help="put the whole arena in this RAM region of the board")
        s.add_argument("--json", action="store_true")
        if name == "build":
            s.add_argument("--stack-bytes", dest="stack_bytes", type=int, default=None, metavar="N",
                           help="stack to reserve (default: the board's linker script; `run` measures the stack "
                                "and reserves what it used plus a margin)")
            s.add_argument("--framework", default=None,
                           help="baremetal (default) or a PlatformIO framework the board offers, e.g. arduino "
                                "(rp2350: USB serial via Arduino-Pico; needs network to build)")
        if name == "run":
            s.add_argument("-n", type=int, default=None,
                           help="inputs to run when the model has no test_inputs() (default 3): held-out "
                                "calibration samples first, then inputs drawn like the calibration data")
            s.add_argument("--method", action="append", default=None, metavar="NAME",
                           help="verify only this method of a program with several (repeatable; default: all)")
            s.add_argument("--timeout", type=float, default=60.0, help="seconds without an answer before giving up")
            s.add_argument("--no-cycles", dest="cycles", action="store_false",
                           help="no cycle estimate (the QEMU plugin counting instructions by class, docs/cycles.md)")
            s.add_argument("--max-int8-error", dest="max_int8_error", type=float, default=None, metavar="X",
                           help="with --quantize int8: also fail (exit 3) when the device's dequantized outputs differ "
                                "from the fp32 model by more than X (max abs error); by default only the device vs "
                                "the host integer reference (bit-exact) decides the exit code")
        s.set_defaults(fn=fn)

    s = sub.add_parser("inspect", help="operators, tensors, plan and sizes of a .pte")
    s.add_argument("pte")
    s.add_argument("--json", action="store_true")
    s.add_argument("--plan", action="store_true", help="the memory plan: tensors by offset, lower bound, peak ops")
    s.add_argument("--plan-svg", metavar="PATH", help="draw the plan (x = step, y = offset) as SVG")
    s.add_argument("--plan-png", metavar="PATH", help="draw the plan as PNG (matplotlib)")
    s.set_defaults(fn=cmd_inspect)

    s = sub.add_parser("kernels", help="list the operators mcu-gen has kernels for: dtypes, what int8 programs do "
                                      "with each, CMSIS-NN, generated (docs/operators.md)")
    s.add_argument("--markdown", action="store_true", help="print docs/operators.md")
    s.set_defaults(fn=cmd_kernels)

    from mcu_gen.cli.board_commands import add_board_commands

    add_board_commands(sub)  # flash, verify, monitor, pio-setup, pio-run
    from mcu_gen.cli.hil_commands import add_hil_commands

    add_hil_commands(sub)  # profile, debug
    from mcu_gen.cli.eval_command import add_eval_command

    add_eval_command(sub)  # eval
    from mcu_gen.cli.sweep_command import add_sweep_command

    add_sweep_command(sub)  # sweep
    from mcu_gen.cli.cache_command import add_cache_command

    add_cache_command(sub)  # cache
    verbose_help = f"show everything the libraries (torch, torchao) print, not only mcu-gen's own messages (or {VERBOSE_ENV}=1)"
    p.add_argument("--verbose", action="store_true", help=verbose_help)
    for s in sub.choices.values():  # also after the command: mcu-gen run --verbose ...
        s.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help)
    return p


VERBOSE_ENV = "MCU_GEN_VERBOSE"
# Loggers of libraries whose messages on import and during export concern their developers, not a
# user of mcu-gen: torchao's "Failed to load .../_C_mxfp8...so" (CUDA extensions a CPU build lacks),
# torch's "... is an Enum subclass ... register_constant() ... deprecated" (torch.utils._pytree).
# Errors still show.
LIBRARY_LOGGERS = ("torch", "torchao", "executorch")


def verbose_requested(args=None) -> bool:
    return bool(getattr(args, "verbose", False)) or os.environ.get(VERBOSE_ENV, "") not in ("", "0")


@contextlib.contextmanager
def _quiet_libraries(verbose: bool):
    """Inside the block (not when `verbose`): the library loggers above at ERROR and libtorch's C++
    warnings (TORCH_CPP_LOG_LEVEL) off. torch sets its loggers' levels when it is imported, so
    when it is not imported yet TORCH_LOGS asks it for ERROR (unless the user set TORCH_LOGS)."""
    if verbose:
        yield
        return
    env_before = {k: os.environ.get(k) for k in ("TORCH_LOGS", "TORCH_CPP_LOG_LEVEL")}
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    torch_imported = "torch" in sys.modules
    if not torch_imported:
        os.environ.setdefault("TORCH_LOGS", "-torch")
    levels = {name: logging.getLogger(name).level for name in LIBRARY_LOGGERS}
    if not torch_imported:
        levels["torch"] = logging.WARNING  # what torch sets when imported without TORCH_LOGS
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _one_line_warnings(verbose: bool = False):
    """mcu-gen's own warnings (classes defined in mcu_gen) as one line on stderr,
    `mcu-gen: warning: <message>`, without Python's file:line and source line.
    Deprecation notices from libraries (torch's own FutureWarnings during export,
    say) concern their developers, not a user of the command: they are not shown
    (with --verbose they are, and every other warning too);
    other warnings are shown as usual. stdout stays clean for --json."""
    with warnings.catch_warnings():
        if verbose:
            warnings.simplefilter("default")
        previous = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if category.__module__.split(".")[0] == "mcu_gen":
                print(f"mcu-gen: warning: {message}", file=sys.stderr)
            elif verbose or not issubclass(category, (DeprecationWarning, FutureWarning)):
                previous(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    verbose = verbose_requested(args)
    try:
        with _quiet_libraries(verbose), _one_line_warnings(verbose), quiet(getattr(args, "json", False)):
            return args.fn(args)  # --json: stdout is one JSON object and stderr carries no bars
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`mcu-gen boards | head`): nothing is wrong here
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's last flush
        return 141  # as a tool the shell ended with SIGPIPE
    except Exception as e:  # every failure ends in one clear line, not a traceback (with --verbose: both)
        if isinstance(e, (McuGenError, FileNotFoundError, RuntimeError, ValueError)):
            if verbose:
                import traceback

                traceback.print_exc(file=sys.stderr)
            return _err(str(e))
        raise


if __name__ == "__main__":
    sys.exit(main())
