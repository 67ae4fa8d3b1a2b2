"""The Python API: the jobs of `mcu-gen build`, `mcu-gen run` and `mcu-gen eval`, taking what a Python
user has: a model file, or an ``nn.Module`` / ``ExportedProgram`` directly (a notebook, the end of a
training script).

    result = mcu_gen.build("model.py", board="mps2-an505", out="out")        # firmware + reports
    r = mcu_gen.run("model.py", board="mps2-an505")                          # ... and verified on the board
    r = mcu_gen.run(net, example_inputs=(x,), calibration=[(x0,), (x1,)], quantize="int8")
    e = mcu_gen.eval(net, example_inputs=(x,), calibration=cal, data=(x_test, y_test), quantize="int8")

With a module: ``example_inputs`` (a tuple of tensors, or one tensor; an ExportedProgram's own when left
out), ``calibration`` (a list of input tuples; a path is a torch.save'd file, as --calibration),
``test_inputs`` (what run verifies on; default: inputs like the calibration data) and ``name`` (of the
output directory mcu-gen-out/<name>-<board> and the reports; default: the module's class name).
"""
from __future__ import annotations

from pathlib import Path


def _model(model, example_inputs=None, calibration=None, test_inputs=None, name=None) -> tuple:
    """(what builder.build takes as the model, the calibration file to pass on or None)."""
    cal_file = calibration if isinstance(calibration, (str, Path)) or calibration is None else None
    cal_list = None if cal_file is not None or calibration is None else list(calibration)
    if isinstance(model, (str, Path)) and example_inputs is None and cal_list is None and test_inputs is None:
        return model, cal_file
    from mcu_gen.capture.model_file import ModelSpec, StructuredModule, input_sets, load_model_file, spec_from_module

    if isinstance(model, (str, Path, ModelSpec)):  # a model file with inputs given here
        spec = load_model_file(model)
        if example_inputs is not None:  # forward's arguments as given here (their nesting and numbers)
            base = spec.module.module if isinstance(spec.module, StructuredModule) else spec.module
            given = spec_from_module(base, example_inputs, cal_list, test_inputs)
            spec.module, spec.example_inputs = given.module, given.example_inputs
            cal, tests = given.calibration_inputs, given.test_inputs
        else:  # nested like the model file's example inputs
            cal = input_sets(spec, cal_list, "calibration") if cal_list is not None else None
            tests = input_sets(spec, test_inputs, "test_inputs") if test_inputs is not None else None
        spec.calibration_inputs = cal or spec.calibration_inputs
        spec.test_inputs = tests or spec.test_inputs
        return spec, cal_file
    return spec_from_module(model, example_inputs, cal_list, test_inputs, name), cal_file


def build(model=None, *, example_inputs=None, calibration=None, test_inputs=None, name=None, **kwargs):
    """mcu_gen.firmware.builder.build: model (file, nn.Module, ExportedProgram) or pte_path= -> firmware
    project, ELF, reports."""
    from mcu_gen.firmware.builder import build as _build

    if model is None:
        return _build(calibration=calibration, **kwargs)
    m, cal = _model(model, example_inputs, calibration, test_inputs, name)
    return _build(m, calibration=cal, **kwargs)


def run(model=None, *, example_inputs=None, calibration=None, test_inputs=None, name=None, **kwargs):
    """mcu_gen.device.runner.run: build, boot the board, infer over serial, compare with PyTorch."""
    from mcu_gen.device.runner import run as _run

    if model is None:
        return _run(calibration=calibration, **kwargs)
    m, cal = _model(model, example_inputs, calibration, test_inputs, name)
    return _run(m, calibration=cal, **kwargs)


def eval(model, *, data, example_inputs=None, calibration=None, name=None, **kwargs):  # noqa: A001 (mcu_gen.eval)
    """mcu_gen.device.evaluate.eval_model: every sample of `data` (a path to an .npz / torch.save'd pairs,
    an (x, y) pair of arrays, or a list of (inputs, label)) on the device; accuracy of fp32 and int8 on
    the host and of the device, agreement, per class, confusion matrix (EvalResult)."""
    from mcu_gen.device.evaluate import eval_model

    m, cal = _model(model, example_inputs, calibration, None, name)
    return eval_model(m, data=data, calibration=cal, **kwargs)
