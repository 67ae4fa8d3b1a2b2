"""The command line is quiet by default: what torch and torchao print on import and during export
(torchao's "Failed to load .../_C_mxfp8...so", torch's "W... _pytree.py ... is an Enum subclass")
is not shown, mcu-gen's own warnings are; --verbose (or MCU_GEN_VERBOSE=1) shows everything."""
import os
import subprocess
import sys

import pytest

from mcu_gen.backends import cmsis_nn
from mcu_gen.cli import build_parser, verbose_requested
from mcu_gen.paths import EXAMPLES

MNIST = EXAMPLES / "mnist" / "model.py"
NOISE = ("Failed to load", "_C_mxfp8", "is an Enum subclass", "register_constant()")


def _build_int8(tmp_path, *extra, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("MCU_GEN_VERBOSE", "TORCH_LOGS", "TORCH_CPP_LOG_LEVEL")}
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", "mcu_gen.cli", "build", "--board", "mps2-an505", "--model", str(MNIST),
                           "--quantize", "int8", "--out", str(tmp_path / "out"), *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "built mnist for mps2-an505" in proc.stdout
    return proc


def _own_warning_expected() -> bool:
    """Without CMSIS-NN, an int8 build on --backend auto warns (mcu-gen's own warning)."""
    return cmsis_nn.locate()[0] is None


@pytest.mark.qemu
def test_int8_build_prints_no_library_noise(tmp_path, qemu_tools):
    proc = _build_int8(tmp_path)
    out = proc.stdout + proc.stderr
    assert not [n for n in NOISE if n in out], out
    assert not any(line[:1] in "WEI" and line[1:5].isdigit() for line in out.splitlines()), out  # glog-style lines
    if _own_warning_expected():
        assert "mcu-gen: warning: int8 operators run on the portable kernels" in proc.stderr


@pytest.mark.qemu
def test_verbose_shows_the_library_messages(tmp_path, qemu_tools):
    proc = _build_int8(tmp_path, "--verbose")
    # torchao's CUDA extensions are absent from a CPU-only torch set-up: it says so on import
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA torch build: torchao's extensions load, so it has nothing to say")
    assert "Failed to load" in proc.stderr and "is an Enum subclass" in proc.stderr, proc.stderr[-3000:]
    if _own_warning_expected():
        assert "mcu-gen: warning: int8 operators run on the portable kernels" in proc.stderr


def test_verbose_flag_and_environment_variable(monkeypatch):
    monkeypatch.delenv("MCU_GEN_VERBOSE", raising=False)
    parser = build_parser()
    assert not verbose_requested(parser.parse_args(["boards"]))
    assert verbose_requested(parser.parse_args(["--verbose", "boards"]))
    assert verbose_requested(parser.parse_args(["run", "--model", "m.py", "--verbose"]))
    monkeypatch.setenv("MCU_GEN_VERBOSE", "1")
    assert verbose_requested(parser.parse_args(["boards"]))
    monkeypatch.setenv("MCU_GEN_VERBOSE", "0")
    assert not verbose_requested(parser.parse_args(["boards"]))
