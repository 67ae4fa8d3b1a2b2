"""mcu-gen: PyTorch model -> verified firmware for microcontrollers.

The folders are the stages a model goes through, in order; each imports only from those before
it (tests/test_imports.py checks): program (IR, .pte) -> capture -> quantize -> backends -> plan
-> reference -> firmware -> device -> dev; cli and api sit on top. boards.py, paths.py,
progress.py and errors.py are shared by all stages.
"""
__version__ = "0.1.0"

from mcu_gen.api import build, eval, run  # noqa: E402,F401,A004
