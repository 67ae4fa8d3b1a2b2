"""Input sets for the host and the device: seeded random inputs for a program, and the host-side
quantization of fp32 inputs (and dequantization of int8 outputs) for programs with int8 I/O."""
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
                one.append(rng.randn(*t.shape).astype(t.dtype))
            else:
                one.append(rng.randint(-128, 128, size=t.shape).astype(t.dtype))
        sets.append(tuple(one))
    return sets


def float_random_inputs(program: Program, n: int) -> list:
    rng = np.random.RandomState(0)
    sets = []
    for _ in range(n):
        sets.append(tuple(rng.randn(*program.tensor(i).shape).astype(np.float32) for i in program.inputs))
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
