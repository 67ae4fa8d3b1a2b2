"""The real-board subcommands of `mcu-gen`: flash, verify, monitor, pio-setup, pio-run.

Registered by mcu_gen/cli/__init__.py (add_board_commands); each has a Python twin in
mcu_gen.flash, mcu_gen.verify and mcu_gen.platformio_setup.
"""
from __future__ import annotations

import json
from pathlib import Path


def _default_build(board: str) -> Path:
    """The newest mcu-gen-out/*-<board> directory, as `mcu-gen build` names them."""
    found = sorted(Path("mcu-gen-out").glob(f"*-{board}"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no build for {board} under mcu-gen-out/: give --build DIR")
    return found[-1]


def cmd_flash(args) -> int:
    from mcu_gen.boards import get_board
    from mcu_gen.device.flash import flash

    build = Path(args.build) if args.build else _default_build(args.board)
    r = flash(get_board(args.board), build)
    how = f"copied to {r.target}" if r.method == "uf2-drive" else f"ran {r.target}"
    print(f"flashed {r.uf2} ({how}); the board reboots into it. Next: mcu-gen verify --port PORT --build {build}")
    return 0


def cmd_verify(args) -> int:
    from mcu_gen.device.verify import verify_port

    r = verify_port(args.port, args.build, model=args.model, n_random=args.n, timeout=args.timeout, baud=args.baud)
    if args.json:
        print(json.dumps(r.to_json(), indent=2))
    else:
        if r.bit_exact is not None:  # int8: identical to the host integer reference, or not
            status = "BIT-EXACT" if r.verified else "MISMATCH"
            print(f"{status}: {r.n_inferences} inference(s) on {r.board} at {r.port} ({r.firmware_version}), "
                  f"against the {r.reference}")
            if r.quant_max_abs_error is not None:
                top1 = "" if r.top1_agreement is None else f", top-1 agreement {r.top1_agreement:.0%}"
                print(f"  quantization error vs fp32: max abs {r.quant_max_abs_error:.3g}{top1}")
        else:
            status = "VERIFIED" if r.verified else "MISMATCH"
            print(f"{status}: {r.n_inferences} inference(s) on {r.board} at {r.port} ({r.firmware_version}), "
                  f"max abs error {r.max_abs_error:.3g} (tolerance {r.tolerance:.3g}, against {r.reference})")
        if r.ticks_per_inference is not None:
            print(f"  {r.ticks_unit} per inference: {r.ticks_per_inference:,}")
    return 0 if r.verified else 2


def cmd_monitor(args) -> int:
    from mcu_gen.device.verify import monitor

    return monitor(args.port, args.baud, seconds=args.seconds)


def cmd_pio_setup(args) -> int:
    from mcu_gen.firmware.platformio_setup import ensure_tool_scons

    core = ensure_tool_scons(args.core_dir, force=args.force)
    print(f"PlatformIO core {core}: tool-scons ready (from the scons wheel); `pio run` builds mcu-gen's "
          "bare-metal projects offline")
    return 0


def cmd_pio_run(args) -> int:
    from mcu_gen.firmware.platformio_setup import ensure_tool_scons, run_pio

    core = ensure_tool_scons(args.core_dir)
    project = Path(args.project)
    if (project / "firmware" / "platformio.ini").is_file():
        project = project / "firmware"  # a build directory
    proc = run_pio(args.pio_args or ["run"], project, core)
    print(proc.stdout, end="")
    return 0


def add_board_commands(sub) -> None:
    s = sub.add_parser("flash", help="flash a build onto a board (rp2350: UF2 boot drive or picotool)")
    s.add_argument("--board", default="rp2350")
    s.add_argument("--build", help="build directory (default: the newest mcu-gen-out/*-<board>)")
    s.set_defaults(fn=cmd_flash)

    s = sub.add_parser("verify", help="run the checks of `mcu-gen run` against a flashed board over a serial port")
    s.add_argument("--port", required=True, help="serial port: /dev/ttyACM0, /dev/ttyUSB0, a pty, socket://host:port")
    s.add_argument("--build", required=True, help="the build directory the board was flashed from")
    s.add_argument("--model", help="the model file, to compare with PyTorch (default: mcu-gen's reference interpreter)")
    s.add_argument("--baud", type=int, default=None, help="default: the board's (115200)")
    s.add_argument("-n", type=int, default=None, help="random inputs when the model has no test_inputs()")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds one inference may take")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("monitor", help="show what the firmware on a serial port reports")
    s.add_argument("--port", required=True)
    s.add_argument("--baud", type=int, default=115200)
    s.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until Ctrl-C)")
    s.set_defaults(fn=cmd_monitor)

    s = sub.add_parser("pio-setup", help="make PlatformIO's tool-scons from the pip-installed scons (offline builds)")
    s.add_argument("--core-dir", help="PlatformIO core dir (default $PLATFORMIO_CORE_DIR or ~/.platformio)")
    s.add_argument("--force", action="store_true", help="remake it even if it is there")
    s.set_defaults(fn=cmd_pio_setup)

    s = sub.add_parser("pio-run", help="`pio` in a generated project, offline-safe (makes tool-scons first)")
    s.add_argument("project", help="a build directory or its firmware/ project")
    s.add_argument("pio_args", nargs="*", help="pio arguments (default: run), e.g. test -e mps2_an505_test")
    s.add_argument("--core-dir")
    s.set_defaults(fn=cmd_pio_run)
