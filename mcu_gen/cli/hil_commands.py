"""`mcu-gen profile` and `mcu-gen debug`: measurements and tensors read from the device over serial."""
from __future__ import annotations

import json
from pathlib import Path

from mcu_gen.cli.options import add_kernel_options, kernel_build_options


def _common(s) -> None:
    s.add_argument("--board", default="mps2-an505")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="model file (.py defining model() and example_inputs(), or a .pt2)")
    src.add_argument("--pte", help="a program exported elsewhere (ExecuTorch .pte)")
    s.add_argument("--port", default=None,
                   help="serial port of a flashed board (default: run the emulated board under QEMU)")
    s.add_argument("--out", help="output directory (default mcu-gen-out/<model>-<board>)")
    s.add_argument("--quantize", choices=["int8"], default=None, help="quantize the model to int8")
    s.add_argument("--io", choices=["float32", "int8"], default="float32", help="I/O dtype with --quantize")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds without an answer before giving up")
    add_kernel_options(s)
    s.add_argument("--json", action="store_true")


def _build(args):
    from mcu_gen.firmware.builder import build
    from mcu_gen.progress import Progress

    with Progress.step(f"building {args.model or args.pte} for {args.board}", enabled=False if args.json else None):
        return build(args.model, board=args.board, pte_path=args.pte, out=args.out, quantize=args.quantize,
                     io=args.io, debug=True, **kernel_build_options(args))


def cmd_profile(args) -> int:
    from mcu_gen.dev.profile import format_table, profile, write_png, write_svg

    result = _build(args)
    r = profile(result=result, port=args.port, timeout=args.timeout)
    out = Path(args.out) if args.out else Path(result.out)
    svg = write_svg(r, out / "profile.svg")
    try:
        png = write_png(r, out / "profile.png")
    except RuntimeError as e:  # matplotlib missing: the SVG is enough
        png, note = None, str(e)
    else:
        note = ""
    if args.json:
        d = r.to_json()
        d.update(svg=str(svg), png=str(png) if png else None)
        print(json.dumps(d, indent=2))
    else:
        print(format_table(r))
        print(f"chart: {svg}" + (f", {png}" if png else f" ({note})"))
    return 0


def cmd_debug(args) -> int:
    from mcu_gen.dev.debug import debug_link, format_report
    from mcu_gen.progress import for_cli
    from mcu_gen.device.session import ensure_program, open_device

    result = _build(args)
    bar = for_cli(args, "stepping through the program on the device")
    with open_device(result.board, result.elf, port=args.port, run_timeout=args.timeout) as link:
        ensure_program(link, result)
        r = debug_link(result, link, progress=bar)
    bar.done()
    if args.json:
        print(json.dumps(r.to_json(), indent=2))
    else:
        print(format_report(r))
    return 0 if r.ok else 2


def add_hil_commands(sub) -> None:
    s = sub.add_parser("profile", help="per-operator instruction counts (cycles on hardware) measured on the device")
    _common(s)
    s.set_defaults(fn=cmd_profile)
    s = sub.add_parser("debug", help="compare every intermediate tensor on the device with the host reference")
    _common(s)
    s.set_defaults(fn=cmd_debug)
