"""pytest plugin: hardware-in-the-loop tests with the `mcu` fixture.

    pytest --mcu-board mps2-an505                          # emulated (QEMU), the default
    pytest --mcu-board rp2350 --mcu-port /dev/ttyACM0      # a flashed board on a serial port

    def test_kws(mcu):
        result = mcu.run("examples/kws_dscnn/model.py", quantize="int8")
        assert result.verified and result.bit_exact

`mcu.run(model, inputs=None, quantize=None, **build_options)` builds the model for the board
(once per model file content + options, in the session's temp dir), boots QEMU or talks to
the port (uploading the program when the firmware has room, or flashing with --mcu-flash),
runs every input set and compares with PyTorch (fp32) or the host integer reference (int8,
bit for bit). `mcu.eval(model, data, quantize="int8")` runs a labelled dataset on the device
(mcu_gen.eval: accuracy of fp32 / int8 on the host and of the device, agreement, per class, confusion
matrix; an EvalResult). `mcu.profile(...)` and `mcu.debug(...)` return mcu_gen.profile / mcu_gen.debug
results. Registered through the `pytest11` entry point of the mcu-gen package.

Under pytest-xdist (`pytest -n 2 --mcu-board mps2-an505`) every worker has its own `mcu`: its own build
folder (the worker's temporary folder, named after it), its own QEMU (one at a time per worker, on a pty:
no TCP ports), and with `--mcu-port A,B` its own board (worker gwN takes the N-th port). The caches mcu-gen
shares between processes (the QEMU plugin, host runners: $MCU_GEN_CACHE) are written atomically.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def pytest_addoption(parser):
    g = parser.getgroup("mcu-gen", "hardware-in-the-loop tests with mcu-gen (the `mcu` fixture)")
    g.addoption("--mcu-board", default="mps2-an505",
                help="board to run on (default mps2-an505, emulated by QEMU; see `mcu-gen boards`)")
    g.addoption("--mcu-port", default=None,
                help="serial port of a flashed board (default: the board's emulator); under pytest-xdist a "
                     "comma-separated list, one board per worker (gw0 the first)")
    g.addoption("--mcu-baud", type=int, default=None, help="baud rate of --mcu-port (default: the board's)")
    g.addoption("--mcu-timeout", type=float, default=60.0, help="seconds an inference may take on the device")
    g.addoption("--mcu-flash", action="store_true",
                help="flash each build (mcu-gen flash) when the board on --mcu-port runs another program")


@dataclass
class McuResult:
    """One model run on the device, compared with the host."""

    board: str
    verified: bool  # fp32: within tolerance of PyTorch; int8: identical to the host integer reference
    bit_exact: bool  # device outputs identical, bit for bit, to the reference
    max_abs_error: float  # against the reference the device must match (PyTorch for fp32, int8 reference)
    tolerance: float
    outputs: list = field(repr=False, default_factory=list)  # per input set, the device's outputs
    instructions_per_inference: int | None = None  # instructions under QEMU, cycles on hardware
    counts: list = field(default_factory=list)  # per inference, same unit
    unit: str = "instructions"
    n_inferences: int = 0
    reference: str = ""
    quantize: str | None = None
    quant_max_abs_error: float | None = None  # int8: dequantized outputs vs the fp32 model
    build: object = field(repr=False, default=None)  # mcu_gen.builder.BuildResult

    @property
    def cycles_per_inference(self) -> int | None:
        return self.instructions_per_inference


class Mcu:
    """The `mcu` fixture: builds models for one board and runs them on it."""

    def __init__(self, board: str, port: str | None, root: Path, baud: int | None = None, timeout: float = 60.0,
                 flash: bool = False):
        from mcu_gen.boards import get_board

        self.board = get_board(board)
        if port is None and not self.board.runs_here:
            raise pytest.UsageError(f"board {self.board.name} has no emulator: give the serial port of a flashed "
                                    f"board with --mcu-port (e.g. --mcu-port /dev/ttyACM0)")
        self.port = port
        self.root = Path(root)
        self.baud = baud
        self.timeout = timeout
        self.flash = flash
        self._builds = {}

    @property
    def emulated(self) -> bool:
        return self.port is None

    # --- builds ---------------------------------------------------------------------------------
    def build(self, model, quantize=None, **build_options):
        """BuildResult for `model`, built once per (file content, options) in this session."""
        from mcu_gen.firmware.builder import build

        opts = dict(build_options, quantize=quantize)
        options = json.dumps(opts, sort_keys=True, default=str).encode()
        if not isinstance(model, (str, Path)):  # a ModelSpec (capture.model_file.spec_from_module): one per object
            key = hashlib.sha256(f"{id(model)}".encode() + options).hexdigest()[:12]
            if key not in self._builds:
                out = self.root / f"{model.name}-{self.board.name}-{key}"
                self._builds[key] = (model, build(model, board=self.board.name, out=out, **opts))
            return self._builds[key][1]
        model = Path(model)
        key = hashlib.sha256(model.read_bytes() + str(model.resolve()).encode() + options).hexdigest()[:12]
        if key not in self._builds:
            out = self.root / f"{model.parent.name or model.stem}-{self.board.name}-{key}"
            self._builds[key] = build(str(model), board=self.board.name, out=out, **opts)
        return self._builds[key]

    def _device(self, result):
        import contextlib

        from mcu_gen.device.session import ensure_program, open_device

        @contextlib.contextmanager
        def connected():
            with open_device(result.board, result.elf, port=self.port, baud=self.baud,
                             run_timeout=self.timeout) as link:
                try:
                    ensure_program(link, result)
                except RuntimeError:
                    if self.emulated or not self.flash:
                        raise
                    from mcu_gen.device.flash import flash

                    flash(result.board, result.out)
                    raise RuntimeError(f"flashed {result.out}; the board reboots: run the test again") from None
                yield link

        return connected()

    # --- runs -----------------------------------------------------------------------------------
    def run(self, model, inputs=None, quantize=None, **build_options) -> McuResult:
        """Builds (cached), runs every input set on the device and compares with the host
        (the same checks as `mcu-gen run`: mcu_gen.runner.check_link)."""
        from mcu_gen.device.runner import check_link
        from mcu_gen.device.session import host_inputs

        result = self.build(model, quantize=quantize, **build_options)
        sets = host_inputs(result, inputs, n=None)
        with self._device(result) as link:
            c = check_link(link, result, sets)
        return McuResult(
            board=self.board.name, verified=c.verified, bit_exact=c.identical,
            max_abs_error=c.reference_max_abs_error, tolerance=c.tolerance, outputs=c.outputs,
            instructions_per_inference=max(c.counts) if c.counts else None, counts=c.counts,
            unit=self.board.ticks_unit, n_inferences=len(sets), reference=c.reference, quantize=quantize,
            quant_max_abs_error=c.quant_max_abs_error if quantize else None, build=result)

    def eval(self, model, data, quantize=None, io=None, top_k=None, **build_options):
        """A labelled dataset through the device (`mcu-gen eval`): an EvalResult with the accuracy of fp32
        and int8 on the host and of the device, their agreement (int8: bit for bit), per class and the
        confusion matrix. int8 builds take int8 I/O unless `io` says otherwise (4x fewer bytes per sample)."""
        from mcu_gen.device.evaluate import evaluate_link
        from mcu_gen.reference.dataset import load_dataset

        io = io or ("int8" if quantize else "float32")
        result = self.build(model, quantize=quantize, io=io, **build_options)
        shapes = [tuple(result.program.tensor(i).shape) for i in result.program.inputs]
        samples, labels = load_dataset(data, shapes)
        with self._device(result) as link:
            return evaluate_link(link, result, samples, labels, top_k=top_k, out_dir=Path(result.out) / "eval")

    def profile(self, model, inputs=None, quantize=None, **build_options):
        from mcu_gen.dev.profile import profile_link

        result = self.build(model, quantize=quantize, **{"debug": True, **build_options})
        with self._device(result) as link:
            return profile_link(result, link, inputs)

    def debug(self, model, inputs=None, quantize=None, **build_options):
        from mcu_gen.dev.debug import debug_link

        result = self.build(model, quantize=quantize, **{"debug": True, **build_options})
        with self._device(result) as link:
            return debug_link(result, link, inputs)


def worker_port(ports: str | None, worker: str | None = None, count: str | None = None) -> str | None:
    """This xdist worker's port of --mcu-port A,B,... (gwN: the N-th); no xdist: the first (and only) one."""
    import os

    if ports is None:
        return None
    names = [p.strip() for p in ports.split(",") if p.strip()]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    count = int((os.environ.get("PYTEST_XDIST_WORKER_COUNT") if count is None else count) or 1)
    if count > len(names):
        raise pytest.UsageError(f"--mcu-port {ports}: {count} pytest-xdist workers need {count} boards (one port "
                                f"each, comma-separated), {len(names)} given; or fewer workers (-n {len(names)})")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return names[index]


@pytest.fixture(scope="session")
def mcu(request, tmp_path_factory) -> Mcu:
    """Builds models for --mcu-board and runs them on it (QEMU, or the board on --mcu-port): one per xdist worker."""
    import os

    opt = request.config.getoption
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return Mcu(opt("--mcu-board"), worker_port(opt("--mcu-port")),
               tmp_path_factory.mktemp(f"mcu-gen-{worker}" if worker else "mcu-gen"), baud=opt("--mcu-baud"),
               timeout=opt("--mcu-timeout"), flash=opt("--mcu-flash"))
