"""Exactness of the generated kernels' arithmetic: where a requantization with fewer roundings
(requant_fast, the single-rounding SMMLAR form) cannot overflow and equals the reference's, the
int32 wrapping the kernels do, and the DSP add's loop emulated on every pair of int8 inputs
against the reference (mcu_gen/reference/integer.py's quantized_add)."""
from __future__ import annotations

import numpy as np

from mcu_gen.quantize.arith import SHIFT_INT8, quantized_add, requantize


def fast_requant(mults, shifts, acc_bound) -> bool:
    """requant_fast applies: every shift a right shift of 1..31, and for every channel
    |acc| * |mult| / 2^31 + 1 + 2^(right - 1) < 2^31 (the 32-bit rounding cannot overflow)."""
    m = np.asarray(mults, np.int64)
    s = np.asarray(shifts, np.int64)
    if s.min() < -31 or s.max() > -1 or m.min() <= -2**31:
        return False
    bound = np.minimum(np.asarray(acc_bound, np.int64), 2**31)
    high = (bound * np.abs(m)) // 2**31 + 1
    return bool(np.all(high + (1 << (-s - 1)) < 2**31))


def smmlar_consts(mults, shifts, acc_bound, out_offset: int):
    """int64 [n, 3] rows (mult, ra, right) of the single-rounding requantization, or None where it
    does not apply. With the accumulator doubled (weights and init x 2, so |acc| < 2^30 is needed),
    CMSIS-NN's two roundings (doubling high multiply, then rounding division by 2^right, ties away
    from zero) and the output offset are one SMMLAR and one arithmetic shift:
        out = (ra + (acc2 >> 31) + ((acc2 * mult + 2^31) >> 32)) >> right,  ra = 2^(right-1) + offset * 2^right
    (``floor((floor(z) + a) / 2^r) = floor((z + a) / 2^r)`` for integer a; a negative accumulator
    has h <= 0 and rounds its ties down, hence the -1). Needs every shift a right shift of 1..31,
    0 <= mult < 2^31 and, per channel, |h| + |ra| + 1 < 2^31 for the largest h the layer can produce."""
    m = np.asarray(mults, np.int64).reshape(-1)
    s = np.asarray(shifts, np.int64).reshape(-1)
    bound = np.asarray(acc_bound, np.int64).reshape(-1)
    if s.min() < -31 or s.max() > -1 or m.min() < 0 or bound.max() >= 2**30:
        return None
    right = -s
    ra = (np.int64(1) << (right - 1)) + int(out_offset) * (np.int64(1) << right)
    high = (bound * m) // 2**31 + 1
    if np.any(high + np.abs(ra) + 1 >= 2**31):
        return None
    return np.stack([m, ra, right], axis=1)


def sign_free(out_offset: int, act_min: int) -> bool:
    """Whether smmlar_consts' requantization may leave out its sign term (acc2 >> 31): where the activation
    minimum is at or above the output offset (a fused ReLU). A negative accumulator has h <= 0 (mult >= 0), so
    both the reference's rounding (ties away from zero) and the one without the -1 (ties up) give a quotient
    <= 0, an output <= offset <= act_min, clamped to act_min alike; a non-negative one has no sign term.
    One instruction (ADD) less per output on the DSP cores; tests/test_generated_kernels.py checks it
    exhaustively against the reference."""
    return int(act_min) >= int(out_offset)


def wrap32(v) -> np.ndarray:
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


# -- the elementwise add on the DSP cores ---------------------------------------------------------
# out = clamp(requantize(a + b, out_mult, out_shift) + out_zp): a and b are functions of one int8
# each, so the generator tabulates them (exact, 2 x 256 int32 in flash, doubled) and the loop adds
# two table entries and requantizes the doubled sum in one rounding with the output offset folded
# (requant_smmlar, as the GEMM: ADD, SMMLAR, ASR, SSAT). Exact where add_dsp_plan's emulation of
# that loop equals the reference on all 65,536 int8 pairs; else the library kernel.


def add_reference(x, y, params) -> np.ndarray:
    """The reference's quantized_add (quantize/arith.py, as the integer reference runs it) of int8
    arrays x, y with AddLayer.params."""
    a_zp, a_m, a_s, b_zp, b_m, b_s, o_zp, o_m, o_s, lo, hi = params
    return quantized_add(x, a_zp, a_m, a_s, y, b_zp, b_m, b_s, o_zp, o_m, o_s, lo, hi)


def wrap_i32(v):
    """int64 values wrapped to int32 (two's complement), kept as int64."""
    return ((np.asarray(v, np.int64) + 2**31) & 0xFFFFFFFF) - 2**31


def add_dsp_plan(l):
    """(doubled table of a, of b — indexed by the int8's bit pattern —, ra, right) of the DSP add of AddLayer
    ``l``, or why it has none: the loop's arithmetic, emulated on every pair of int8 values, must equal the
    reference."""
    right = -l.out_shift
    if not 1 <= right <= 31:
        return "add: the output shift is not a right shift of 1..31"
    v = np.arange(256, dtype=np.int64)
    v = np.where(v < 128, v, v - 256)  # the int8 of each bit pattern
    ta = 2 * requantize((v - l.a_zp) << SHIFT_INT8, l.a_mult, l.a_shift)
    tb = 2 * requantize((v - l.b_zp) << SHIFT_INT8, l.b_mult, l.b_shift)
    if int(np.abs(ta).max()) + int(np.abs(tb).max()) >= 2**31:
        return "add: the doubled sum may exceed 32 bits"
    ra = (1 << (right - 1)) + l.out_zp * (1 << right)
    if abs(ra) >= 2**30:  # ra + (s2 >> 31) and SMMLAR's 64-bit sum (the C form's too) stay in range
        return "add: the output offset does not fold into the rounding constant"
    s2 = ta[:, None] + tb[None, :]  # ADD (x and y by bit pattern), no overflow (checked above)
    r = wrap_i32(ra + (s2 >> 31) + ((s2 * l.out_mult + 2**31) >> 32)) >> right  # SMMLAR, ASR
    got = np.clip(r, max(-128, l.act_min), min(127, l.act_max))
    want = add_reference(v[:, None], v[None, :], l.params)
    if not np.array_equal(got, want):
        return "add: no exact single-rounding requantization of the sum"
    return ta, tb, ra, right
