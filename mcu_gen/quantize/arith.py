"""Per-tensor int8 quantization arithmetic exactly as torchao's quantized_decomposed operators do
it (float32, round half to even): what the lowering uses to build lookup tables and the integer
reference (mcu_gen.reference.integer) uses to quantize inputs and dequantize outputs. And the
integer requantization of the kernels (CMSIS-NN's arm_nn_requantize) and the int8 add built on it,
shared by the integer reference and the kernel generators (mcu_gen/backends/generated*.py), which
prove their instruction sequences against it."""
from __future__ import annotations

import numpy as np


def quantize_f32(x: np.ndarray, scale: float, zp: int, qmin=-128, qmax=127) -> np.ndarray:
    """quantized_decomposed.quantize_per_tensor: round(x * (1/scale)) + zp in float32, half to even."""
    inv = np.float32(1.0 / scale)
    y = np.round(np.asarray(x, np.float32) * inv) + np.float32(zp)
    return np.clip(y, qmin, qmax).astype(np.int8)


def dequantize_f32(q: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """quantized_decomposed.dequantize_per_tensor: (q - zp) * scale in float32."""
    return (np.asarray(q, np.float32) - np.float32(zp)) * np.float32(scale)


SHIFT_INT8 = 20  # left shift of quantized_add operands


def requantize(acc, multiplier: int, shift: int) -> np.ndarray:
    """CMSIS-NN arm_nn_requantize on int32/int64 values (vectorised over acc)."""
    v = np.asarray(acc, dtype=np.int64) << max(shift, 0)
    v = (v * int(multiplier) + (1 << 30)) >> 31
    right = max(-shift, 0)
    if right:
        mask = (1 << right) - 1
        remainder = v & mask
        v = v >> right
        threshold = (mask >> 1) + (v < 0)
        v = v + (remainder > threshold)
    return v.astype(np.int64)


def quantized_add(a, a_zp, a_mult, a_shift, b, b_zp, b_mult, b_shift, out_zp, out_mult, out_shift, act_min,
                  act_max):
    fa = requantize((np.asarray(a).astype(np.int64) - a_zp) << SHIFT_INT8, a_mult, a_shift)
    fb = requantize((np.asarray(b).astype(np.int64) - b_zp) << SHIFT_INT8, b_mult, b_shift)
    y = requantize(fa + fb, out_mult, out_shift) + out_zp
    return np.clip(y, act_min, act_max).astype(np.int8)
