"""Load a user's model file.

A model file is either

- a Python file defining ``model()`` (returns an ``nn.Module``) and
  ``example_inputs()`` (a tuple of tensors), and optionally
  ``calibration_inputs()`` and ``test_inputs()`` (iterables of input tuples) and, for a
  model with state, ``test_sequences()`` and ``calibration_sequences()`` (iterables of
  sequences, each a list of input tuples fed one step at a time with the state carried), and, for a
  program with several methods (docs/methods.md),
  ``methods(model)``: given the module ``model()`` returned, a dict ``{name: (callable, example
  inputs)}`` or ``{name: (callable, example inputs, test inputs)}``, in method order; each callable is
  a method of that module (``model.encode``) or one of its submodules, so the methods share its
  weights and buffers. With ``methods``, ``example_inputs()`` is optional; or
- a ``.pt2`` file written by ``torch.export.save``.
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from mcu_gen.errors import McuGenError


class ModelFileError(McuGenError):
    """The model file is missing or does not define what mcu-gen needs."""


@dataclass
class ModelSpec:
    module: Optional[torch.nn.Module]
    example_inputs: tuple
    test_inputs: Optional[list] = None  # list of input tuples
    calibration_inputs: Optional[list] = None  # list of input tuples
    name: str = "model"
    exported_program: Optional[torch.export.ExportedProgram] = None
    path: Optional[str] = None  # the model file, used to find the user's source lines
    test_sequences: Optional[list] = None  # list of sequences (lists of input tuples), stateful models
    calibration_sequences: Optional[list] = None  # the same, to calibrate a stateful model's int8 quantization
    methods: Optional[list] = None  # MethodSpec per method (a model file's methods(model)), else one method
    # Calibration samples int8 quantization kept out of calibration (a model without test inputs):
    # what `run` verifies on first (mcu_gen/quantize/calibration.py).
    held_out_inputs: Optional[list] = None


@dataclass
class MethodSpec:
    """One method of a model with several: ``owner`` is the submodule of the root module whose method
    ``attr`` it is (``path`` its name in the root, "" for the root itself), called with ``example_inputs``."""
    name: str
    owner: torch.nn.Module
    attr: str
    path: str
    example_inputs: tuple
    test_inputs: Optional[list] = None

    def call(self, root: torch.nn.Module):
        """The method, bound to ``root`` or a copy of it (the same submodule path)."""
        owner = root.get_submodule(self.path) if self.path else root
        return getattr(owner, self.attr)


def load_model_file(path) -> ModelSpec:
    """A ModelSpec from a model file (.py or .pt2); a ModelSpec (spec_from_module) is taken as is."""
    if isinstance(path, ModelSpec):
        return path
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file not found: {path}")
    if path.suffix == ".pt2":
        return _load_pt2(path)
    if path.suffix != ".py":
        raise ModelFileError(f"{path}: expected a Python model file (.py) or a torch.export file (.pt2)")
    return _load_python(path)


def spec_from_module(model, example_inputs, calibration=None, test_inputs=None, name: str | None = None
                     ) -> ModelSpec:
    """A ModelSpec for what a Python user has at the end of training: an ``nn.Module`` or an
    ``ExportedProgram``, its example inputs (a tensor or a tuple of tensors; an ExportedProgram's own
    when omitted), calibration and test inputs (lists of input tuples or of tensors)."""
    ep = model if isinstance(model, torch.export.ExportedProgram) else None
    if ep is None and not isinstance(model, torch.nn.Module):
        raise ModelFileError(f"expected an nn.Module or a torch.export ExportedProgram, got {type(model).__name__}")
    where = name or type(model).__name__
    if example_inputs is None and ep is not None and getattr(ep, "example_inputs", None):
        example_inputs = tuple(ep.example_inputs[0])
    if example_inputs is None:
        raise ModelFileError(f"{where}: give example_inputs=(x,), the inputs forward() takes")
    example = _input_tuple(example_inputs, where, "example_inputs")
    lists = []
    for what, items in (("calibration", calibration), ("test_inputs", test_inputs)):
        if items is None:
            lists.append(None)
            continue
        if isinstance(items, torch.Tensor):
            raise ModelFileError(f"{where}: {what} must be a list of input tuples, not one tensor")
        lists.append([_input_tuple(item, where, f"each item of {what}") for item in items])
    module = ep.module(check_guards=False) if ep is not None else model.eval()
    return ModelSpec(module=module, example_inputs=example, calibration_inputs=lists[0], test_inputs=lists[1],
                     name=name or (type(model).__name__.lower() if ep is None else "exported"),
                     exported_program=ep)


def model_name(path: Path) -> str:
    return path.parent.name if path.stem == "model" and path.parent.name else path.stem


def _load_pt2(path: Path) -> ModelSpec:
    try:
        ep = torch.export.load(str(path))
    except Exception as e:  # torch raises many kinds here
        raise ModelFileError(f"{path}: cannot load the exported program: {e}") from e
    example = getattr(ep, "example_inputs", None)
    if not example:
        raise ModelFileError(f"{path}: the exported program carries no example inputs")
    args, kwargs = example
    if kwargs:
        raise ModelFileError(f"{path}: keyword inputs are not supported")
    return ModelSpec(None, tuple(args), name=model_name(path), exported_program=ep, path=str(path.resolve()))


def _load_python(path: Path) -> ModelSpec:
    mod_name = f"mcu_gen_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses/pickling inside the user file need this
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(mod_name, None)
        raise ModelFileError(f"{path}: error while importing: {type(e).__name__}: {e}") from e

    has_methods = getattr(module, "methods", None) is not None
    for required in ("model",) + (() if has_methods else ("example_inputs",)):
        if not callable(getattr(module, required, None)):
            raise ModelFileError(f"{path}: must define a function `{required}()`")

    net = module.model()
    if not isinstance(net, torch.nn.Module):
        raise ModelFileError(f"{path}: model() must return a torch.nn.Module, got {type(net).__name__}")
    methods = _method_list(module, net, path) if has_methods else None
    if callable(getattr(module, "example_inputs", None)):
        example = _input_tuple(module.example_inputs(), path, "example_inputs()")
    else:
        example = methods[0].example_inputs
    return ModelSpec(
        methods=methods,
        module=net,
        example_inputs=example,
        test_inputs=_input_list(module, "test_inputs", path),
        calibration_inputs=_input_list(module, "calibration_inputs", path),
        name=model_name(path),
        path=str(path.resolve()),
        test_sequences=_sequence_list(module, path),
        calibration_sequences=_sequence_list(module, path, "calibration_sequences"),
    )


def _input_tuple(value, path, what) -> tuple:
    if isinstance(value, torch.Tensor):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in value):
        raise ModelFileError(f"{path}: {what} must return a tuple of tensors, got {type(value).__name__}")
    return tuple(value)


def _input_list(module, fn_name, path) -> Optional[list]:
    fn = getattr(module, fn_name, None)
    if fn is None:
        return None
    if not callable(fn):
        raise ModelFileError(f"{path}: `{fn_name}` must be a function")
    items = fn()
    try:
        items = list(items)
    except TypeError:
        raise ModelFileError(f"{path}: {fn_name}() must return an iterable of input tuples") from None
    return [_input_tuple(item, path, f"each item of {fn_name}()") for item in items]


def _sequence_list(module, path, fn_name: str = "test_sequences") -> Optional[list]:
    fn = getattr(module, fn_name, None)
    if fn is None:
        return None
    if not callable(fn):
        raise ModelFileError(f"{path}: `{fn_name}` must be a function")
    try:
        seqs = [list(seq) for seq in fn()]
    except TypeError:
        raise ModelFileError(f"{path}: {fn_name}() must return an iterable of sequences "
                             "(each a list of input tuples)") from None
    if not seqs or any(not seq for seq in seqs):
        raise ModelFileError(f"{path}: {fn_name}() must return at least one non-empty sequence")
    return [[_input_tuple(step, path, f"each step of {fn_name}()") for step in seq] for seq in seqs]


def _method_list(module, net: torch.nn.Module, path) -> list:
    """The model file's methods(model) as MethodSpecs (see the module docstring)."""
    fn = getattr(module, "methods")
    if not callable(fn):
        raise ModelFileError(f"{path}: `methods` must be a function methods(model)")
    table = fn(net)
    if not isinstance(table, dict) or not table:
        raise ModelFileError(f"{path}: methods(model) must return a non-empty dict {{name: (callable, example "
                             f"inputs)}}, got {type(table).__name__}")
    paths = {id(m): p for p, m in net.named_modules()}
    out = []
    for name, entry in table.items():
        what = f"methods()[{name!r}]"
        if not isinstance(name, str) or not name.isidentifier() or len(name.encode()) > 64:
            raise ModelFileError(f"{path}: method name {name!r} must be an identifier of at most 64 bytes")
        if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
            raise ModelFileError(f"{path}: {what} must be (callable, example inputs) or "
                                 f"(callable, example inputs, test inputs)")
        target = entry[0]
        if isinstance(target, torch.nn.Module):
            owner, attr = target, "forward"
        elif callable(target) and isinstance(getattr(target, "__self__", None), torch.nn.Module):
            owner, attr = target.__self__, target.__name__
        else:
            raise ModelFileError(f"{path}: {what}: give a method of the module model() returned (model.encode) "
                                 f"or one of its submodules, not {type(target).__name__}")
        if id(owner) not in paths:
            raise ModelFileError(f"{path}: {what}: {type(owner).__name__} is not part of the module model() "
                                 f"returned: the methods must share its weights")
        example = _input_tuple(entry[1], path, f"{what}'s example inputs")
        tests = None
        if len(entry) == 3:
            try:
                tests = [_input_tuple(t, path, f"each test input of {what}") for t in entry[2]]
            except TypeError:
                raise ModelFileError(f"{path}: {what}'s test inputs must be an iterable of input tuples") from None
        out.append(MethodSpec(name, owner, attr, paths[id(owner)], example, tests))
    return out
