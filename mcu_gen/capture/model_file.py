"""Load a user's model file.

A model file is either

- a Python file defining ``model()`` (returns an ``nn.Module``) and
  ``example_inputs()`` (a tuple of forward's arguments: tensors, also nested in lists, tuples and dicts, and
  numbers, which are compiled in; see InputStructure), and optionally
  ``calibration_inputs()`` and ``test_inputs()`` (iterables of input tuples) and, for a
  model with state, ``test_sequences()`` and ``calibration_sequences()`` (iterables of
  sequences, each a list of input tuples fed one step at a time with the state carried), and, for a
  program with several methods (docs/methods.md),
  ``methods(model)``: given the module ``model()`` returned, a dict ``{name: (callable, example
  inputs)}`` or ``{name: (callable, example inputs, test inputs)}``, in method order; each callable is
  a method of that module (``model.encode``) or one of its submodules, so the methods share its
  weights and buffers. With ``methods``, ``example_inputs()`` is optional. Each of these but ``methods``
  may also be the value itself (``model = Net()``, ``example_inputs = (x,)``); or
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
    name = name or (type(model).__name__.lower() if ep is None else "exported")
    if example_inputs is None and ep is not None and getattr(ep, "example_inputs", None):
        example_inputs = tuple(ep.example_inputs[0])
    if example_inputs is None:
        raise ModelFileError(f"{where}: give example_inputs=(x,), the inputs forward() takes")
    if ep is None:
        model, example, structure = _structured(model, example_inputs, where, "example_inputs")
    else:
        example, structure = _input_tuple(example_inputs, where, "example_inputs"), None
    lists = []
    for what, items in (("calibration", calibration), ("test_inputs", test_inputs)):
        if items is None:
            lists.append(None)
            continue
        if isinstance(items, torch.Tensor):
            raise ModelFileError(f"{where}: {what} must be a list of input tuples, not one tensor")
        lists.append([_input_tuple(item, where, f"item {k} of {what}", structure) for k, item in enumerate(items)])
    module = ep.module(check_guards=False) if ep is not None else model.eval()
    return ModelSpec(module=module, example_inputs=example, calibration_inputs=lists[0], test_inputs=lists[1],
                     name=name, exported_program=ep)


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
    net = _defined(module, "model", path)
    if net is None:
        raise ModelFileError(f"{path}: must define a function `model()` returning the nn.Module (or `model`, the "
                             "module itself)")
    if not isinstance(net, torch.nn.Module):
        raise ModelFileError(f"{path}: model() must return a torch.nn.Module, got {type(net).__name__}")
    given = _defined(module, "example_inputs", path)
    if given is None and not has_methods:
        raise ModelFileError(f"{path}: must define a function `example_inputs()` returning a tuple of forward's "
                             "arguments (or `example_inputs`, the tuple itself)")
    methods = _method_list(module, net, path) if has_methods else None
    structure = None
    if given is not None and not has_methods:
        net, example, structure = _structured(net, given, path, "example_inputs()")
    elif given is not None:
        example = _input_tuple(given, path, "example_inputs()")
    else:
        example = methods[0].example_inputs
    return ModelSpec(
        methods=methods,
        module=net,
        example_inputs=example,
        test_inputs=_input_list(module, "test_inputs", path, structure),
        calibration_inputs=_input_list(module, "calibration_inputs", path, structure),
        name=model_name(path),
        path=str(path.resolve()),
        test_sequences=_sequence_list(module, path, structure=structure),
        calibration_sequences=_sequence_list(module, path, "calibration_sequences", structure),
    )


def _input_tuple(value, path, what, structure: "InputStructure | None" = None) -> tuple:
    """The tensors of one set of forward's arguments: a tensor, or a tuple of tensors; with a ``structure``
    (example inputs that nest or hold numbers) the tensors among arguments nested like the example's."""
    if isinstance(value, torch.Tensor):
        value = (value,)
    if structure is not None:
        return structure.flatten(value, path, what)
    if not isinstance(value, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in value):
        got = type(value).__name__ if not isinstance(value, (tuple, list)) else \
            next(type(t).__name__ for t in value if not isinstance(t, torch.Tensor))
        raise ModelFileError(f"{path}: {what} must return a tuple of tensors, and holds a {got}")
    return tuple(value)


# Arguments of forward that are not tensors and that torch.export compiles in as constants.
CONSTANT_ARGUMENTS = (bool, int, float, str, type(None))


class InputStructure:
    """How forward's arguments nest (tuples, lists, dicts of tensors) and the numbers among them, from the example
    inputs. The program takes the tensors, in torch.export's order (pytree leaves); the numbers (a temperature,
    a flag) are compiled in, as torch.export specializes them, so every set of inputs must give the same."""

    def __init__(self, treespec, constants: dict):
        self.treespec, self.constants = treespec, constants  # constants: leaf index -> value

    @classmethod
    def of(cls, value, path, what) -> "InputStructure | None":
        """None when ``value`` is already a flat tuple of tensors (no structure to keep)."""
        from torch.utils._pytree import tree_flatten

        value = (value,) if isinstance(value, torch.Tensor) else value
        if not isinstance(value, (tuple, list)):
            raise ModelFileError(f"{path}: {what} must return a tuple of forward's arguments, got "
                                 f"{type(value).__name__}")
        if all(isinstance(t, torch.Tensor) for t in value):
            return None
        leaves, spec = tree_flatten(tuple(value))
        bad = next((x for x in leaves if not isinstance(x, (torch.Tensor,) + CONSTANT_ARGUMENTS)), None)
        if bad is not None:
            raise ModelFileError(f"{path}: {what} holds a {type(bad).__name__}: forward's arguments must be tensors "
                                 "(also in tuples, lists or dicts), or numbers, strings or None, which are compiled "
                                 "into the program")
        if not any(isinstance(x, torch.Tensor) for x in leaves):
            raise ModelFileError(f"{path}: {what} holds no tensor: the program needs at least one tensor input")
        return cls(spec, {k: x for k, x in enumerate(leaves) if not isinstance(x, torch.Tensor)})

    def flatten(self, value, path, what) -> tuple:
        from torch.utils._pytree import tree_flatten

        leaves, spec = tree_flatten(tuple(value) if isinstance(value, (tuple, list)) else (value,))
        if spec != self.treespec:
            raise ModelFileError(f"{path}: {what} is nested differently from example_inputs() ({spec} against "
                                 f"{self.treespec})")
        for k, c in self.constants.items():
            if type(leaves[k]) is not type(c) or leaves[k] != c:
                raise ModelFileError(
                    f"{path}: {what} gives {leaves[k]!r} where example_inputs() gives {c!r}: a number argument is "
                    "compiled into the program (torch.export specializes it), so every input must give the same; "
                    "pass it as a tensor to vary it")
        return tuple(x for x in leaves if isinstance(x, torch.Tensor))

    def rebuild(self, tensors) -> tuple:
        """forward's arguments from the program's tensors."""
        from torch.utils._pytree import tree_unflatten

        it = iter(tensors)
        leaves = [self.constants[k] if k in self.constants else next(it)
                  for k in range(self.treespec.num_leaves)]
        return tuple(tree_unflatten(leaves, self.treespec))


class StructuredModule(torch.nn.Module):
    """The user's module called with its own arguments (nested, with numbers) rebuilt from the flat tensors a
    program takes (InputStructure): what mcu-gen exports, quantizes and compares with."""

    def __init__(self, module: torch.nn.Module, structure: InputStructure):
        super().__init__()
        self.module = module
        self.structure = structure

    def forward(self, *tensors):
        return self.module(*self.structure.rebuild(tensors))


def input_sets(spec: ModelSpec, items, what: str) -> list:
    """Sets of forward's arguments (a list of tuples, or of tensors) as the program's input tuples, nested like
    the spec's example inputs."""
    if isinstance(items, torch.Tensor):
        raise ModelFileError(f"{spec.name}: {what} must be a list of input tuples, not one tensor")
    structure = spec.module.structure if isinstance(spec.module, StructuredModule) else None
    return [_input_tuple(item, spec.name, f"item {k} of {what}", structure) for k, item in enumerate(items)]


def _structured(net: torch.nn.Module, example, path, what):
    """(module, example tensors, structure): ``net`` wrapped in a StructuredModule when its example inputs nest or
    hold numbers."""
    structure = InputStructure.of(example, path, what)
    if structure is None:
        return net, _input_tuple(example, path, what), None
    return StructuredModule(net, structure), structure.flatten(example, path, what), structure


def _defined(module, name: str, path):
    """What the model file defines as `name`: a function's (or class's) result, or the value itself (a module, a
    tuple, a list); None when it defines nothing of that name. What the function raises is named."""
    value = getattr(module, name, None)
    if value is None or isinstance(value, torch.nn.Module) or not callable(value):
        return value
    try:
        return value()
    except Exception as e:
        raise ModelFileError(f"{path}: {name}() raised {type(e).__name__}: {e}") from e


def _input_list(module, fn_name, path, structure: InputStructure | None = None) -> Optional[list]:
    items = _defined(module, fn_name, path)
    if items is None:
        return None
    try:
        items = list(items)
    except TypeError:
        raise ModelFileError(f"{path}: {fn_name}() must return an iterable of input tuples") from None
    return [_input_tuple(item, path, f"item {k} of {fn_name}()", structure) for k, item in enumerate(items)]


def _sequence_list(module, path, fn_name: str = "test_sequences", structure: InputStructure | None = None
                   ) -> Optional[list]:
    given = _defined(module, fn_name, path)
    if given is None:
        return None
    try:
        seqs = [list(seq) for seq in given]
    except TypeError:
        raise ModelFileError(f"{path}: {fn_name}() must return an iterable of sequences "
                             "(each a list of input tuples)") from None
    if not seqs or any(not seq for seq in seqs):
        raise ModelFileError(f"{path}: {fn_name}() must return at least one non-empty sequence")
    return [[_input_tuple(step, path, f"each step of {fn_name}()", structure) for step in seq] for seq in seqs]


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


def output_leaves(out) -> list:
    """A model's result as the flat list of tensors its program outputs, in torch.export's order (the leaves of
    tuples, lists, dicts, namedtuples and registered output classes); None and numbers are not outputs."""
    import torch
    from torch.utils._pytree import tree_leaves

    return [o for o in tree_leaves(out) if isinstance(o, torch.Tensor)]
