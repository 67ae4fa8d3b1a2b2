"""Stage 3, quantize: mcu-gen's PT2E Quantizer (PTQ, QAT) and the lowering of the converted graph
to cortex_m:: int8 operators. Takes a model spec; gives an int8 IR Program (the host integer
reference that it must match is mcu_gen.reference.integer). See docs/quantization.md.

    program, gm = export_quantized(spec, io="float32", calibration=None, has_kernel=None)
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import torch

from mcu_gen.errors import McuGenError
from mcu_gen.capture.schema import UNSUPPORTED_FLOATS, ExportError

_QUANTIZER_NAMES = ("McuQuantizer", "capture_for_quantization", "is_quantized_graph")


def __getattr__(name):
    """The quantizer (and with it torchao) is imported only when used: running and verifying
    fp32 or already-built int8 programs, and the integer reference, need none of it."""
    if name in _QUANTIZER_NAMES:
        from mcu_gen.quantize import quantizer

        return getattr(quantizer, name)
    if name == "quantize_ptq":
        from mcu_gen.quantize.calibration import quantize_ptq

        return quantize_ptq
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class QuantizeError(McuGenError, ValueError):
    """Quantization cannot go on (no calibration data, a bad calibration file, ...)."""


def load_calibration(path, n_inputs: int) -> list:
    """A torch.save'd list of input tuples (a bare tensor per item is accepted for one-input models)."""
    path = Path(path)
    if not path.is_file():
        raise QuantizeError(f"calibration file not found: {path}")
    try:
        items = torch.load(str(path), weights_only=True)
    except Exception as e:
        raise QuantizeError(f"{path}: cannot load calibration data: {type(e).__name__}: {e}") from None
    if isinstance(items, torch.Tensor):
        items = [items]
    if not isinstance(items, (list, tuple)) or not items:
        raise QuantizeError(f"{path}: expected a non-empty list of input tuples")
    out = []
    for k, item in enumerate(items):
        if isinstance(item, torch.Tensor):
            item = (item,)
        if not isinstance(item, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in item):
            raise QuantizeError(f"{path}: item {k} is not a tuple of tensors")
        if len(item) != n_inputs:
            raise QuantizeError(f"{path}: item {k} has {len(item)} inputs, the model takes {n_inputs}")
        out.append(tuple(item))
    return out


def _check_float32(spec, module) -> None:
    """PT2E quantizes a float32 model: a float64/float16/bfloat16 parameter, buffer or example input is refused here,
    by name, not by torchao's assertion deep inside."""
    named = [(f"parameter {n}", t) for n, t in module.named_parameters()] + \
            [(f"buffer {n}", t) for n, t in module.named_buffers()] + \
            [(f"example input {k}", t) for k, t in enumerate(spec.example_inputs)]
    for what, t in named:
        if isinstance(t, torch.Tensor) and t.dtype in UNSUPPORTED_FLOATS:
            raise QuantizeError(f"{spec.name}: {what} is {str(t.dtype).replace('torch.', '')}: int8 quantization "
                                f"starts from a float32 model; convert it and its inputs with model.float(), x.float()")


def quantized_module(spec, calibration=None, method: str | None = None,
                     bias_correction: bool = False, int8_inputs: bool = False) -> tuple[torch.fx.GraphModule, bool]:
    """(converted GraphModule, was it quantized already). A model that is already a converted
    PT2E graph (QAT with McuQuantizer, then convert_pt2e) is taken as is. ``method``: the calibration
    method (quantize/observers.py CHOICES; None: the default, auto). A model without test inputs keeps a few
    calibration samples out of calibration (spec.held_out_inputs: what `run` verifies it on)."""
    from mcu_gen.quantize.calibration import held_out_count, quantize_ptq
    from mcu_gen.quantize.observers import CHOICES, DEFAULT_CHOICE, check_method
    from mcu_gen.quantize.capture import is_quantized_graph

    try:
        method = check_method(method or DEFAULT_CHOICE, CHOICES)
    except ValueError as e:
        raise QuantizeError(str(e)) from None

    module = spec.module
    if module is None and spec.exported_program is not None:
        module = spec.exported_program.module(check_guards=False)
    if isinstance(module, torch.fx.GraphModule) and is_quantized_graph(module):
        return module, True
    if module is None:
        raise QuantizeError(f"{spec.name}: nothing to quantize")
    _check_float32(spec, module)
    if calibration is not None:
        data = load_calibration(calibration, len(spec.example_inputs))
    else:  # a stateful model: calibration_sequences() (state reset between them), else calibration_inputs()
        data = getattr(spec, "calibration_sequences", None) or spec.calibration_inputs  # as one sequence
    if not data:
        where = f" ({spec.path})" if spec.path else ""
        raise QuantizeError(
            f"{spec.name}{where}: int8 quantization needs calibration data: define calibration_inputs() in the "
            "model file (a list of input tuples, e.g. 8-100 real samples; for a model with state, one sequence "
            "fed in order, or define calibration_sequences()) or pass --calibration FILE (torch.save of such a "
            "list). mcu-gen never calibrates on random data.")
    from mcu_gen.quantize.capture import StatefulModelError

    sequences = bool(getattr(spec, "calibration_sequences", None))
    hold = 0 if (spec.test_inputs or sequences) else held_out_count(len(data))
    try:
        gm = quantize_ptq(module, spec.example_inputs, data, method=method, hold_out=hold,
                          bias_correction=bias_correction, compare_on=spec.test_inputs, int8_inputs=int8_inputs)
        spec.held_out_inputs = gm.meta.get("mcu_held_out") or None
        return gm, False
    except QuantizeError:
        raise
    except (StatefulModelError, ExportError) as e:  # said in full already (ExportError: the fp32 lowering's)
        raise QuantizeError(f"{spec.name}: {e}") from None
    except Exception as e:
        raise QuantizeError(f"{spec.name}: quantization failed: {type(e).__name__}: {e}") from e


def export_quantized(spec, io: str = "float32", calibration=None,
                     has_kernel: Optional[Callable[[str], bool]] = None, calibration_method: str | None = None,
                     bias_correction: bool = False):
    """(unplanned int8 Program, converted GraphModule). program.meta["calibration"]: how it was
    calibrated and how every calibration method did (calibration.quantize_ptq)."""
    from mcu_gen.quantize.lowering import lower_quantized

    gm, pre = quantized_module(spec, calibration, calibration_method, bias_correction, int8_inputs=io == "int8")
    program = lower_quantized(gm, io=io, user_file=spec.path, has_kernel=has_kernel)
    program.meta["model"] = spec.name
    program.meta["prequantized"] = pre
    if gm.meta.get("mcu_calibration"):
        program.meta["calibration"] = gm.meta["mcu_calibration"]
    return program, gm
