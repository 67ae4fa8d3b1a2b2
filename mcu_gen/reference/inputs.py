"""Input sets for the host and the device: seeded random inputs for a program (and the build's plan check's), and
the host-side quantization of fp32 inputs (and dequantization of int8 outputs) for programs with int8 I/O."""
from __future__ import annotations

import numpy as np

from mcu_gen.program.ir import Program


def to_numpy(x) -> np.ndarray:
    """A tensor (torch or numpy or a number) as a numpy array."""
    import torch

    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def random_inputs(program: Program, n: int, seed: int = 0) -> list:
    rng = np.random.RandomState(seed)
    sets = []
    for _ in range(n):
        one = []
        for i in program.inputs:
            t = program.tensor(i)
            if t.dtype.startswith("float"):
                one.append(np.asarray(rng.randn(*t.shape)).astype(t.dtype))  # asarray: 0-dim
            else:
                one.append(np.asarray(rng.randint(-128, 128, size=t.shape)).astype(t.dtype))
        sets.append(tuple(one))
    return sets


def plan_check_inputs(program: Program, seed: int = 0) -> list:
    """Deterministic random inputs of the program's shapes and dtypes (for the build's check_program_plan)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in program.inputs:
        t = program.tensor(i)
        if t.dtype in ("float32", "float64", "float16"):
            out.append(rng.standard_normal(t.shape).astype(t.dtype))
        elif t.dtype == "bool":
            out.append(rng.integers(0, 2, t.shape).astype(bool))
        elif t.dtype in ("int32", "int64"):
            # token ids, positions, lengths, offsets: values any index, count or list of offsets accepts (an
            # embedding of two rows; an EmbeddingBag's offsets rise from 0): 0s then 1s
            flat = np.sort(rng.integers(0, 2, int(np.prod(t.shape, dtype=np.int64))))
            flat[:1] = 0
            out.append(flat.reshape(t.shape).astype(t.dtype))
        else:  # int8/uint8/int16: quantized data, every value valid
            info = np.iinfo(t.dtype)
            out.append(rng.integers(max(info.min, -128), min(info.max, 127) + 1, t.shape).astype(t.dtype))
    return out


def example_check_inputs(program: Program, examples) -> list | None:
    """The model's own example inputs as the program's inputs (for the build's check_program_plan), when they are
    its tensors one for one, of its shapes and dtypes (an int8-I/O program's inputs are not: None). Real values are
    valid for every operator (offsets that start at 0, indices inside a table), where random ones may not be."""
    import torch
    import torch.utils._pytree as pytree

    from mcu_gen.capture.export import torch_dtype_name

    leaves = pytree.tree_leaves(tuple(examples or ()))
    if len(leaves) != len(program.inputs) or not all(isinstance(x, torch.Tensor) for x in leaves):
        return None
    out = []
    for x, i in zip(leaves, program.inputs):
        t = program.tensor(i)
        if tuple(x.shape) != tuple(t.shape) or torch_dtype_name(x.dtype) != t.dtype:
            return None
        out.append(x.detach().contiguous().numpy())
    return out


def float_random_inputs(program: Program, n: int) -> list:
    rng = np.random.RandomState(0)
    sets = []
    for _ in range(n):
        sets.append(tuple(np.asarray(rng.randn(*program.tensor(i).shape)).astype(np.float32) for i in program.inputs))
    return sets


def quantize_inputs(program: Program, inputs: tuple) -> tuple:
    """fp32 inputs -> the int8 tensors an --io int8 program takes (host-side quantization)."""
    from mcu_gen.reference.integer import quantize_f32

    out = []
    for x, i in zip(inputs, program.inputs):
        t = program.tensor(i)
        x = np.asarray(x)
        if t.dtype == "int8" and x.dtype != np.int8:  # int8 given as is, floats quantized
            x = quantize_f32(x.astype(np.float32), t.scale, t.zero_point)
        out.append(x)
    return tuple(out)


def dequantize_outputs(program: Program, outputs: list) -> list:
    from mcu_gen.reference.integer import dequantize_f32

    res = []
    for y, i in zip(outputs, program.outputs):
        t = program.tensor(i)
        res.append(dequantize_f32(y, t.scale, t.zero_point) if t.dtype == "int8" else np.asarray(y, np.float32))
    return res


# -- in-distribution inputs (run's defaults when the model file has no test_inputs()) -------------
MAX_POOL = 1 << 16  # values per input tensor the drawn inputs choose from (an even spread of what was seen)


def _arrays(samples) -> list:
    return [tuple(to_numpy(x) for x in one) for one in samples]


def matched_inputs(samples: list, n: int, seed: int = 0) -> list:
    """`n` input tuples drawn like `samples` (input tuples): every element of input k is drawn from the
    values input k takes over the samples (its empirical distribution per tensor), in its shape and dtype.
    Range, mean, spread and the set of values (token ids, bools) are the samples'; nothing lies outside.
    An int32/int64 input is drawn whole, one of the samples' tensors: indices carry structure that drawing per
    element would break (an EmbeddingBag's offsets rise from 0; lengths and positions belong together)."""
    rng = np.random.RandomState(seed)
    samples = _arrays(samples)
    pools = []
    for k, first in enumerate(samples[0]):
        whole = first.dtype in (np.int32, np.int64) and all(np.asarray(one[k]).shape == first.shape for one in samples)
        pool = np.concatenate([np.asarray(one[k]).reshape(-1) for one in samples])
        if pool.size > MAX_POOL:
            pool = pool[np.linspace(0, pool.size - 1, MAX_POOL).astype(np.int64)]
        pools.append((pool, first.shape, first.dtype, [np.asarray(one[k]) for one in samples] if whole else None))
    out = []
    for _ in range(n):
        out.append(tuple(tensors[rng.randint(len(tensors))].copy() if tensors is not None else
                         np.asarray(rng.choice(pool, size=shape)).astype(dtype) if pool.size else np.zeros(shape, dtype)
                         for pool, shape, dtype, tensors in pools))
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def in_distribution_inputs(spec, program: Program, n: int, quantized: bool) -> tuple[list, str]:
    """(input tuples, where they come from) for a model without test inputs: the calibration samples
    quantization kept out (int8; an fp32 build: the calibration samples themselves), then inputs drawn
    from the calibration inputs' values per tensor (matched_inputs), else from the example input's;
    never a distribution the model was not given. Without a model (a .pte): seeded random ones."""
    if spec is None:
        sets = float_random_inputs(program, n) if quantized else random_inputs(program, n)
        return sets, (f"{_count(n, 'seeded random input')} (no model: standard normal floats, integers in "
                      "[-128, 127]; give test inputs to verify on real data)")
    held = _arrays(getattr(spec, "held_out_inputs", None) or [])
    calib = _arrays(spec.calibration_inputs or [])
    if not calib and getattr(spec, "calibration_sequences", None):
        calib = _arrays([step for seq in spec.calibration_sequences for step in seq])
    if quantized:
        first, first_what = held, "held-out calibration sample"
    else:
        first, first_what = calib, "calibration sample"
    taken = first[:n]
    parts = [_count(len(taken), first_what)] if taken else []
    if quantized and taken:
        parts[0] += " (not calibrated on)"
    rest = n - len(taken)
    if rest > 0:
        source = calib + held if (calib or held) else _arrays([spec.example_inputs])
        what = "the calibration inputs'" if (calib or held) else "the example input's"
        taken = taken + matched_inputs(source, rest, seed=0)
        parts.append(f"{_count(rest, 'input')} drawn from {what} values, per tensor")
    return taken, " + ".join(parts)


def sequence_steps(spec, program: Program, n_steps: int, seed: int = 0) -> tuple[list, str]:
    """One sequence of `n_steps` steps for a stateful model without test sequences, drawn like its
    calibration steps (else its example input), per tensor; seeded random without a model."""
    if spec is None:
        return random_inputs(program, n_steps, seed=seed), f"one seeded random sequence of {n_steps} steps"
    steps = [step for seq in (spec.calibration_sequences or []) for step in seq] or list(spec.calibration_inputs or [])
    what = "the calibration steps'" if steps else "the example input's"
    steps = steps or [spec.example_inputs]
    return matched_inputs(steps, n_steps, seed=seed), f"one sequence of {n_steps} steps drawn from {what} values"
