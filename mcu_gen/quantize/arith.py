"""Per-tensor int8 quantization arithmetic exactly as torchao's quantized_decomposed operators do
it (float32, round half to even): what the lowering uses to build lookup tables and the integer
reference (mcu_gen.reference.integer) uses to quantize inputs and dequantize outputs."""
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
