"""`mcu-gen eval`: accuracy on a labelled dataset, on the device and on the host, side by side.

Registered by mcu_gen/cli/__init__.py (add_eval_command); the Python twin is mcu_gen.eval
(mcu_gen/device/evaluate.py)."""
from __future__ import annotations

import json

from mcu_gen.cli.options import add_calibration_options, add_kernel_options, calibration_options, kernel_build_options


def cmd_eval(args) -> int:
    from mcu_gen.device.eval_report import summary_lines, write_confusion
    from mcu_gen.device.evaluate import eval_model, default_eval_out
    from mcu_gen.progress import for_cli

    bar = for_cli(args, "samples")
    r = eval_model(args.model, data=args.data, board=args.board, out=args.out or default_eval_out(args.model, args.board),
                   quantize=args.quantize, io=args.io, calibration=args.calibration, top_k=args.top_k,
                   timeout=args.timeout, progress=bar, port=args.port, baud=args.baud, max_samples=args.max_samples,
                   **calibration_options(args), **kernel_build_options(args))
    bar.done()
    if args.confusion:
        r.confusion_files += write_confusion(r.confusion, f"{r.model} on {r.board}", [args.confusion])
    if args.json:
        print(json.dumps(r.to_json(), indent=2))
    else:
        status = "AGREE" if r.verified else "MISMATCH"
        print(f"{status}: {r.n_samples} samples of {args.data} on {r.board} ({r.quantize or 'fp32'}, I/O {r.io}), "
              f"{r.samples_per_second:.1f} samples/s over the serial link")
        for line in summary_lines(r):
            print(line)
        print(f"  confusion matrix: {', '.join(r.confusion_files)}; eval.json and eval.md in {r.out}")
    return 0 if r.verified else 2


def add_eval_command(sub) -> None:
    s = sub.add_parser("eval", help="run a labelled dataset on the device: accuracy of fp32 / int8 on the host and "
                                    "on the device, agreement, per class, confusion matrix")
    s.add_argument("--board", default="mps2-an505")
    s.add_argument("--model", required=True, help="model file (.py or .pt2), as for build and run")
    s.add_argument("--data", required=True,
                   help="labelled samples: an .npz with x (samples along the first axis; x0, x1, ... for several "
                        "inputs) and y (class indices), or a torch.save'd list of (inputs, label) pairs")
    s.add_argument("--out", help="output directory (default mcu-gen-out/<model>-<board>-eval)")
    s.add_argument("--quantize", choices=["int8"], default=None, help="evaluate the int8 build (and fp32 on the host)")
    s.add_argument("--io", choices=["float32", "int8"], default=None,
                   help="firmware I/O with --quantize (default int8: the host quantizes, 4x fewer bytes per sample "
                        "over the link, the same int8 network)")
    s.add_argument("--calibration", default=None, help="torch.save'd list of input tuples (default: the model file's)")
    add_calibration_options(s)
    add_kernel_options(s)
    s.add_argument("--top-k", dest="top_k", type=int, default=None,
                   help="also report top-k accuracy (default 5 for more than 5 classes)")
    s.add_argument("--max-samples", dest="max_samples", type=int, default=None, help="only the first N samples")
    s.add_argument("--confusion", metavar="PATH", default=None,
                   help="also write the confusion matrix here (.png or .svg; confusion.png/.svg are always written)")
    s.add_argument("--port", default=None, help="a flashed board's serial port instead of the emulator")
    s.add_argument("--baud", type=int, default=None)
    s.add_argument("--timeout", type=float, default=60.0, help="seconds an inference may take")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_eval)
