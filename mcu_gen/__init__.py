"""mcu-gen: PyTorch model -> verified firmware for microcontrollers."""
__version__ = "0.1.0"


def build(*args, **kwargs):
    from .builder import build as _build

    return _build(*args, **kwargs)


def run(*args, **kwargs):
    from .runner import run as _run

    return _run(*args, **kwargs)
