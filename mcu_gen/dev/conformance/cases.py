"""Conformance cases from PyTorch's own operator test inputs (OpInfo).

``torch.testing._internal.common_methods_invocations.op_db`` lists every operator with a function
that generates sample inputs (``op.sample_inputs(device, dtype)``). A case is one sample of one op
wrapped in an ``nn.Module`` whose inputs are the sample's tensors (its other arguments are
constants of the module), so it is a model mcu-gen (and ExecuTorch) can export.

    for case in iter_cases(dtypes=("float32",)): case.module, case.inputs, case.expected

Per op and dtype, the case is the first sample that is small enough for an MCU (every tensor at
most MAX_ELEMENTS elements, none empty) and that torch.export can capture, with deterministic
tensor outputs. Samples are generated with a seed derived from the op's name, so another process
(the ExecuTorch worker) rebuilds exactly the same case from its id (``case_by_id``).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Iterator, Optional

import torch
import torch.utils._pytree as pytree

MAX_ELEMENTS = 4096       # per tensor: 16 KiB of float32
MAX_SAMPLES_TRIED = 4     # samples tried per op and dtype before the op has no case
DTYPES = {"float32": torch.float32, "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}

# Out of scope (issue 24): random numbers, training-only and backward ops, sparse and complex tensors.
_SKIP_WORDS = ("rand", "bernoulli", "dropout", "multinomial", "_backward", "sparse", "complex", "fft.",
               "cuda", "jiterator", "empty", "cauchy", "exponential", "geometric", "log_normal", "normal.in_place",
               "uniform")  # (other random ops: two eager runs differ, see _eager)


def _seed(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def op_key(op) -> str:
    """'name' or 'name.variant' (OpInfo's variant_test_name)."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


@dataclass
class Case:
    id: str                   # "op_key:dtype:sample index"
    op: str                   # op_key
    family: str               # for the per-family table: the op's name up to its first '.' or '_'
    dtype: str
    module: torch.nn.Module
    inputs: tuple             # the module's inputs (contiguous tensors)
    expected: list = field(default_factory=list)  # eager outputs (flattened tensors)

    def fresh_inputs(self) -> tuple:
        return tuple(x.clone() for x in self.inputs)


class OpModule(torch.nn.Module):
    """``fn(*args, **kwargs)`` of one OpInfo sample; its tensors are the module's inputs."""

    def __init__(self, fn, spec, leaves: list, tensor_slots: list):
        super().__init__()
        self.fn, self.spec, self.leaves, self.tensor_slots = fn, spec, leaves, tensor_slots

    def forward(self, *xs):
        leaves = list(self.leaves)
        for slot, x in zip(self.tensor_slots, xs):
            leaves[slot] = x
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        out = self.fn(*args, **kwargs)
        flat = pytree.tree_leaves(out)
        return tuple(flat) if len(flat) != 1 else flat[0]


def family(name: str) -> str:
    """The operator without its namespace and variant: 'nn.functional.pixel_shuffle' -> 'pixel_shuffle',
    'max.reduction_with_dim' -> 'max'."""
    for prefix in ("nn.functional.", "_refs."):
        if name.startswith(prefix):
            return name[len(prefix):].split(".")[0]
    for prefix in ("masked.", "linalg.", "special."):  # kept: linalg.norm is not norm
        if name.startswith(prefix):
            return prefix + name[len(prefix):].split(".")[0]
    return name.split(".")[0].strip("_") or name


def _skipped(op) -> bool:
    key = op_key(op)
    return any(w in key for w in _SKIP_WORDS)


def _module_of(op, sample) -> Optional[tuple]:
    """(module, inputs) for a sample, None when it is not a small, non-empty, tensor-only sample."""
    leaves, spec = pytree.tree_flatten(((sample.input, *sample.args), dict(sample.kwargs)))
    slots, inputs = [], []
    for k, v in enumerate(leaves):
        if isinstance(v, torch.Tensor):
            if v.numel() == 0 or v.numel() > MAX_ELEMENTS or v.is_complex() or v.layout != torch.strided:
                return None
            if v.dtype not in DTYPES.values():
                return None
            slots.append(k)
            inputs.append(v.detach().clone().contiguous())
            leaves[k] = None
    if not inputs:
        return None
    return OpModule(op.op, spec, leaves, slots).eval(), tuple(inputs)


def _eager(module, inputs) -> Optional[list]:
    """Flattened tensor outputs of two runs, None if not tensors, not small, or not deterministic."""
    try:
        with torch.no_grad():
            a = module(*[x.clone() for x in inputs])
            b = module(*[x.clone() for x in inputs])
    except Exception:
        return None
    a, b = pytree.tree_leaves(a), pytree.tree_leaves(b)
    if not a or not all(isinstance(t, torch.Tensor) for t in a):
        return None
    if any(t.dtype not in DTYPES.values() or t.numel() > MAX_ELEMENTS or t.layout != torch.strided for t in a):
        return None
    if not all(torch.equal(x, y) or (x.is_floating_point() and torch.equal(x.isnan(), y.isnan())
                                     and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y))) for x, y in zip(a, b)):
        return None  # random
    return [t.detach().clone() for t in a]


def _captures(module, inputs) -> bool:
    try:
        torch.export.export(module, tuple(x.clone() for x in inputs))
        return True
    except Exception:
        return False


def op_database() -> list:
    from torch.testing._internal.common_methods_invocations import op_db

    return list(op_db)


def case_for(op, dtype: str, check_export: bool = True, index: Optional[int] = None) -> Optional[Case]:
    """The case of one op and dtype, or None; with ``index``, the case of that sample (for case_by_id)."""
    if _skipped(op) or DTYPES[dtype] not in op.dtypes:
        return None
    key = op_key(op)
    torch.manual_seed(_seed(f"{key}:{dtype}"))
    try:
        samples = op.sample_inputs("cpu", DTYPES[dtype], requires_grad=False)
        tried = 0
        for k, sample in enumerate(samples):
            if index is not None and k != index:
                if k > index:
                    return None
                continue
            made = _module_of(op, sample)
            if made is None:
                continue
            tried += 1
            module, inputs = made
            expected = _eager(module, inputs)
            if expected is not None and (not check_export or _captures(module, inputs)):
                return Case(f"{key}:{dtype}:{k}", key, family(op.name), dtype, module, inputs, expected)
            if tried >= MAX_SAMPLES_TRIED:
                return None
    except Exception:  # a sample generator that fails on this machine
        return None
    return None


def iter_cases(dtypes=("float32",), ops: Optional[list] = None, check_export: bool = True) -> Iterator[Case]:
    """Cases of every op in op_db (or of the op keys in ``ops``), per dtype."""
    wanted = set(ops) if ops is not None else None
    for op in op_database():
        if wanted is not None and op_key(op) not in wanted:
            continue
        for dtype in dtypes:
            case = case_for(op, dtype, check_export)
            if case is not None:
                yield case


def case_by_id(case_id: str, db: Optional[list] = None) -> Optional[Case]:
    key, dtype, index = case_id.rsplit(":", 2)
    for op in db or op_database():
        if op_key(op) == key:
            case = case_for(op, dtype, check_export=False, index=int(index))
            return case if case is not None and case.id == case_id else None
    return None
