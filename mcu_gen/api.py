"""The Python API: the same two jobs as `mcu-gen build` and `mcu-gen run`.

    result = mcu_gen.build("model.py", board="mps2-an505", out="out")   # firmware + reports
    r = mcu_gen.run("model.py", board="mps2-an505")                     # ... and verified on the board
"""
from __future__ import annotations


def build(*args, **kwargs):
    """mcu_gen.firmware.builder.build: model file (or .pte) -> firmware project, ELF, reports."""
    from mcu_gen.firmware.builder import build as _build

    return _build(*args, **kwargs)


def run(*args, **kwargs):
    """mcu_gen.device.runner.run: build, boot the board, infer over serial, compare with PyTorch."""
    from mcu_gen.device.runner import run as _run

    return _run(*args, **kwargs)
