"""Independent oracles for the int8 arithmetic (issue 26, item 5).

Everything that decides int8 exactness (the integer reference, the generated kernels' proofs, the
device's BIT-EXACT verdict) rests on mcu_gen/quantize/arith.py. This file checks that arithmetic, and
the generated kernels' instruction-level emulations, against a second implementation written here
from the published definitions, in plain Python integers, element by element, without importing
arith.py or anything built on it:

- CMSIS-NN (ARM-software/CMSIS-NN, Include/arm_nnsupportfunctions.h): arm_nn_requantize =
  arm_nn_divide_by_power_of_two(arm_nn_doubling_high_mult_no_sat(val * 2^LEFT_SHIFT(shift), mult),
  RIGHT_SHIFT(shift)); doubling_high_mult_no_sat adds 2^30 to the 64-bit product and keeps bits 31..62
  (ties up); divide_by_power_of_two rounds ties away from zero (threshold + 1 for negative results).
  arm_elementwise_add_s8: each operand (x + offset) << left_shift (20), requantized, summed, requantized,
  + out offset, clamped. arm_convolve_s8: bias + sum((x + input_offset) * w), per-channel requantize,
  + output offset, clamped; padding reads as the input offset's zero point (x = -input_offset).
- Armv8.1-M (DDI 0553) MVE pseudocode: VQRDMULH = SignedSat((2 * a * b + 2^31) >> 32), VQRDMLAH =
  SignedSat(((acc << 32) + 2 * a * b + 2^31) >> 32), VRSHR #n = (a + 2^(n-1)) >> n, VSHR.S32 arithmetic,
  VADD.I32 modulo 2^32. The MVE add kernels' emitted instruction text is parsed and run on those.
"""
from __future__ import annotations

import numpy as np
import pytest

I32_MIN, I32_MAX = -2**31, 2**31 - 1


# -- the oracle (plain ints) ---------------------------------------------------------------------------
def _c_shift_right(v: int, n: int) -> int:
    return v >> n  # arithmetic shift of a signed value, as arm-none-eabi-gcc compiles `>>` on int32/int64


def doubling_high_mult_no_sat(m1: int, m2: int) -> int:
    mult = (1 << 30) + m1 * m2
    return _c_shift_right(mult, 31)


def divide_by_power_of_two(dividend: int, exponent: int) -> int:
    remainder_mask = (1 << exponent) - 1
    remainder = dividend & remainder_mask
    result = _c_shift_right(dividend, exponent)
    threshold = remainder_mask >> 1
    if result < 0:
        threshold += 1
    if remainder > threshold:
        result += 1
    return result


def oracle_requantize(val: int, multiplier: int, shift: int) -> int:
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    return divide_by_power_of_two(doubling_high_mult_no_sat(val * (1 << left), multiplier), right)


def oracle_add(x: int, y: int, a_zp, a_m, a_s, b_zp, b_m, b_s, o_zp, o_m, o_s, lo, hi) -> int:
    in1 = oracle_requantize((x - a_zp) << 20, a_m, a_s)  # input_1_offset = -zero point
    in2 = oracle_requantize((y - b_zp) << 20, b_m, b_s)
    s = oracle_requantize(in1 + in2, o_m, o_s) + o_zp
    return min(max(s, lo), hi)


def oracle_conv(x, w_ohwi, bias, stride, padding, input_offset, output_offset, mults, shifts, lo, hi):
    """x [H][W][C] (one image, NHWC as arm_convolve_s8 reads it), w [O][kh][kw][C]: out [H'][W'][O]."""
    h, wd, c = len(x), len(x[0]), len(x[0][0])
    o, kh, kw = len(w_ohwi), len(w_ohwi[0]), len(w_ohwi[0][0])
    (sh, sw), (ph, pw) = stride, padding
    oh, ow = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    out = [[[0] * o for _ in range(ow)] for _ in range(oh)]
    for i in range(oh):
        for j in range(ow):
            for oc in range(o):
                acc = int(bias[oc]) if bias is not None else 0
                for di in range(kh):
                    for dj in range(kw):
                        yy, xx = i * sh - ph + di, j * sw - pw + dj
                        if 0 <= yy < h and 0 <= xx < wd:  # padding contributes (x + offset) = 0
                            for ic in range(c):
                                acc += (int(x[yy][xx][ic]) + input_offset) * int(w_ohwi[oc][di][dj][ic])
                v = oracle_requantize(acc, int(mults[oc]), int(shifts[oc])) + output_offset
                out[i][j][oc] = min(max(v, lo), hi)
    return out


def _sat32(v: int) -> int:
    return min(max(v, I32_MIN), I32_MAX)


def _wrap32(v: int) -> int:
    return ((v + 2**31) & 0xFFFFFFFF) - 2**31


MVE = {  # mnemonic -> lane semantics (destination's old value, source, operand)
    "vqrdmulh.s32": lambda d, a, b: _sat32((2 * a * b + (1 << 31)) >> 32),
    "vqrdmlah.s32": lambda d, a, b: _sat32(((d << 32) + 2 * a * b + (1 << 31)) >> 32),
    "vrshr.s32": lambda d, a, n: (a + (1 << (n - 1))) >> n,
    "vshr.s32": lambda d, a, n: a >> n,
    "vadd.i32": lambda d, a, b: _wrap32(a + b),
}


def run_mve_text(lines, regs: dict) -> dict:
    """Runs instruction text like 'vqrdmulh.s32 %q[qa], %q[qa], %[ma]' on one lane: regs maps each
    register name to its int value; '#n' operands are immediates."""
    for line in lines:
        mnemonic, rest = line.split(" ", 1)
        dst, src, operand = (p.strip() for p in rest.split(","))
        b = int(operand[1:]) if operand.startswith("#") else regs[operand]
        regs[dst] = MVE[mnemonic](regs.get(dst, 0), regs[src], b)
    return regs


# -- cases ----------------------------------------------------------------------------------------------
def _requant_cases(rng, n=3000):
    """(acc, mult, shift) with ties: accumulators around multiples of 2^(right-1) and products at .5."""
    cases = []
    for _ in range(n):
        shift = int(rng.integers(-31, 4))
        mult = int(rng.choice([1 << 30, -(1 << 30), 2**31 - 1, -2**31 + 1, int(rng.integers(-2**31 + 1, 2**31))]))
        lim = 2**31 >> max(shift, 0)
        acc = int(rng.integers(-lim, lim))
        if rng.random() < 0.3 and shift < 0:  # a tie of the rounding division
            acc = (int(rng.integers(-1000, 1000)) * 2 + 1) << (-shift - 1)
            mult = 1 << 30  # doubling high mult of 2^30 halves exactly: the tie survives to the division
            acc = max(min(acc, lim - 1), -lim)
        cases.append((acc, mult, shift))
    return cases


def test_requantize_matches_cmsis_nn_definition():
    from mcu_gen.quantize.arith import requantize

    rng = np.random.default_rng(26)
    cases = _requant_cases(rng)
    accs = np.array([c[0] for c in cases], np.int64)
    got = [int(requantize(np.array([a]), m, s)[0]) for a, m, s in cases]
    want = [oracle_requantize(a, m, s) for a, m, s in cases]
    assert got == want
    # vectorised as the reference uses it, one (mult, shift) over many accumulators
    for m, s in [(1 << 30, -1), (1 << 30, -7), (-(1 << 30), -3), (1518500250, -9), (2**31 - 1, 2)]:
        lim = 2**30 >> max(s, 0)
        vals = np.concatenate([np.arange(-4096, 4096), accs % lim])
        assert requantize(vals, m, s).tolist() == [oracle_requantize(int(v), m, s) for v in vals], (m, s)
    # the oracle's own rounding, by hand: the multiply rounds ties up, the division ties away from zero
    assert [oracle_requantize(v, 1 << 30, 0) for v in (-3, -1, 1, 3)] == [-1, 0, 1, 2]
    assert [divide_by_power_of_two(v, 1) for v in (-3, -1, 1, 3)] == [-2, -1, 1, 2]


ADD_PARAMS = [  # (a_zp, a_mult, a_shift, b_zp, b_mult, b_shift, out_zp, out_mult, out_shift, act_min, act_max)
    (-3, 1 << 30, -1, 5, 1 << 30, 0, -2, 1 << 30, -1 - 20 + 1, -128, 127),  # ResNet-8-like shifts
    (7, -(1 << 30), -1, 0, 1 << 30, -1, 0, 1 << 30, -21, -128, 127),  # a negative multiplier
    (0, 1 << 30, 1, 0, 1 << 30, 0, 3, 1 << 30, -22, -100, 90),  # a left shift of an operand, clamps inside
    (-128, 1518500250, -2, 127, 1073741824, -3, -5, 1789569707, -19, -128, 127),
]


def _all_pairs():
    x, y = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    return x.reshape(-1), y.reshape(-1)


@pytest.mark.parametrize("prm", ADD_PARAMS)
def test_quantized_add_and_generated_add_reference_match_cmsis_nn(prm):
    """On all 65,536 pairs: arith.quantized_add (the integer reference's), exactness.add_reference and
    generated_mve.add_reference (the generators' proof targets) equal the oracle's add."""
    from mcu_gen.backends import generated_mve
    from mcu_gen.backends.generated import exactness
    from mcu_gen.reference import integer

    x, y = _all_pairs()
    want = np.array([oracle_add(int(a), int(b), *prm) for a, b in zip(x, y)])
    np.testing.assert_array_equal(integer.quantized_add(x, *prm[:3], y, *prm[3:]), want)
    np.testing.assert_array_equal(exactness.add_reference(x, y, prm), want)
    np.testing.assert_array_equal(generated_mve.add_reference(x, y, prm), want)


def test_add_reference_on_random_parameters_matches_cmsis_nn():
    """Random zero points, multipliers (either sign) and shifts (right 45 .. left 5), 2,048 random pairs
    each plus the four corners: generated_mve.add_reference (= the integer reference's add) equals the
    oracle's add."""
    from mcu_gen.backends import generated_mve

    rng = np.random.default_rng(21)
    for _ in range(40):
        zps = [int(v) for v in rng.integers(-256, 257, 3)]
        mults = [int(v) for v in rng.integers(-2**31 + 1, 2**31, 3)]
        shifts = [int(v) for v in rng.integers(-45, 6, 3)]
        lo = int(rng.integers(-128, 0))
        prm = (zps[0], mults[0], shifts[0], zps[1], mults[1], shifts[1], zps[2], mults[2], shifts[2], lo,
               int(rng.integers(lo, 128)))
        x = np.concatenate([rng.integers(-128, 128, 2048), [-128, -128, 127, 127]])
        y = np.concatenate([rng.integers(-128, 128, 2048), [-128, 127, -128, 127]])
        want = [oracle_add(int(a), int(b), *prm) for a, b in zip(x, y)]
        assert generated_mve.add_reference(x, y, prm).tolist() == want, prm


def test_mve_add_plan_instruction_text_matches_cmsis_nn():
    """The generated MVE add: the requantization instructions as emitted (mve_add.requant_asm's text) are parsed
    and run on the Armv8.1-M semantics above, lane by lane, with the plan's scales, shift, zero point and
    clamps, and must equal the oracle's add on every pair; and the table-driven emulation
    (mve_add.requant_emulated) the generator proves with equals that text on the same values."""
    from mcu_gen.backends import generated_mve as mve
    from mcu_gen.backends.generated import mve_add
    from mcu_gen.backends.generated.layers import ADD_OPS, AddLayer

    x, y = _all_pairs()
    rng = np.random.default_rng(5)
    idx = np.concatenate([np.arange(0, 65536, 257), rng.integers(0, 65536, 1500)])  # diagonal + random pairs
    for prm in ADD_PARAMS[:2] + ADD_PARAMS[3:]:
        l = AddLayer("layer_0", 0, ADD_OPS[0], 64, *prm)
        plan = mve.add_plan(l)
        assert not isinstance(plan, str), (prm, plan)
        asm = {"a": mve_add.requant_asm("qa", "qt", "ma", -prm[2], plan.variant_a),
               "b": mve_add.requant_asm("qb", "qt", "mb", -prm[5], plan.variant_b),
               "o": mve_add.requant_asm("qa", "qt", "mo", -prm[8], plan.variant_out)}
        for k in idx:
            a, b = int(x[k]), int(y[k])
            regs = {"qa": (a - prm[0]) * plan.scale_a, "qb": (b - prm[3]) * plan.scale_b,
                    "ma": prm[1], "mb": prm[4], "mo": prm[7]}
            run_mve_text(asm["a"], regs)
            run_mve_text(asm["b"], regs)
            emulated_a = int(mve_add.requant_emulated(np.array([(a - prm[0]) * plan.scale_a]), prm[1], -prm[2],
                                                   plan.variant_a)[0])
            assert regs["qa"] == emulated_a, (prm, a)
            regs["qa"] = _wrap32(regs["qa"] + regs["qb"])
            if plan.out_left:
                regs["qa"] = _wrap32(regs["qa"] << plan.out_left)
            run_mve_text(asm["o"], regs)
            out = regs["qa"] + prm[6]
            if plan.clamp_min:
                out = max(out, prm[9])
            if plan.clamp_max:
                out = min(out, prm[10])
            out = ((out + 128) & 0xFF) - 128  # VSTRB.32 keeps the low byte
            assert out == oracle_add(a, b, *prm), (prm, a, b, plan)


def test_every_mve_requant_sequence_text_equals_its_emulation():
    """All four variants, on random int32 values and every right shift 1..31: the emitted text run on the
    architecture's semantics equals mve_add.requant_emulated (the one table drives both)."""
    from mcu_gen.backends import generated_mve as mve
    from mcu_gen.backends.generated import mve_add

    rng = np.random.default_rng(7)
    vals = [int(v) for v in rng.integers(-2**31, 2**31, 60)] + [I32_MIN, I32_MAX, -1, 0, 1]
    for variant in mve.REQUANT_VARIANTS:
        for r in ([0] if variant == "mul" else range(1, 32)):
            for m in (1 << 30, -(1 << 30), 2**31 - 1, I32_MIN, int(rng.integers(-2**31, 2**31))):
                got = mve_add.requant_emulated(np.array(vals, np.int64), m, r, variant).tolist()
                text = mve_add.requant_asm("x", "t", "m", r, variant)
                want = [run_mve_text(text, {"x": v, "m": m})["x"] for v in vals]
                assert got == want, (variant, r, m)


def test_smmlar_single_rounding_matches_cmsis_nn():
    """The DSP GEMM's requantization (exactness.smmlar_consts: one SMMLAR + ASR on the doubled
    accumulator, the output offset folded in) equals the oracle's requantize + offset wherever the
    generator says it applies, at the accumulator bound and at ties."""
    from mcu_gen.backends.generated import exactness

    rng = np.random.default_rng(11)
    for _ in range(60):
        n = 4
        mults = rng.integers(1 << 29, 2**31, n)
        shifts = rng.integers(-31, 0, n)
        bound = rng.integers(1, 2**29, n)
        offset = int(rng.integers(-128, 128))
        consts = exactness.smmlar_consts(mults, shifts, bound, offset)
        if consts is None:
            continue
        for c in range(n):
            m, ra, right = (int(v) for v in consts[c])
            b = int(bound[c])
            accs = [0, 1, -1, b - 1, -(b - 1)] + [int(v) for v in rng.integers(-b + 1, b, 40)]
            accs += [(k * 2 + 1) << (-int(shifts[c]) - 1) for k in range(-3, 3) if abs((k * 2 + 1) << (-int(shifts[c]) - 1)) < b]
            for acc in accs:
                acc2 = 2 * acc  # doubled accumulator (weights and init x 2)
                smmlar = _c_shift_right(acc2 * m + 2**31, 32)  # SMMLAR: rounded high word of acc2 * m
                got = _c_shift_right(ra + _c_shift_right(acc2, 31) + smmlar, right)
                want = oracle_requantize(acc, int(mults[c]), int(shifts[c])) + offset
                assert got == want, (acc, int(mults[c]), int(shifts[c]), offset)


def test_integer_reference_conv_matches_cmsis_nn():
    """reference.integer.quantized_conv2d (what the device is held to) against the oracle's
    convolution on small random layers, with padding, strides and per-channel requantization."""
    from mcu_gen.reference import integer

    rng = np.random.default_rng(3)
    for case in range(6):
        h, w, c, o, k = int(rng.integers(3, 7)), int(rng.integers(3, 7)), int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.choice([1, 3]))
        stride = (int(rng.integers(1, 3)),) * 2
        padding = (k // 2, k // 2) if case % 2 else (0, 0)
        x = rng.integers(-128, 128, (1, c, h, w)).astype(np.int8)
        wt = rng.integers(-127, 128, (o, k, k, c)).astype(np.int8)
        bias = rng.integers(-5000, 5000, o).astype(np.int32)
        in_off, out_off = int(rng.integers(-127, 129)), int(rng.integers(-128, 128))
        mults = rng.integers(1 << 30, 2**31, o)
        shifts = rng.integers(-12, -6, o)
        lo, hi = -128, int(rng.integers(0, 128))
        got = integer.quantized_conv2d(x, wt, bias, stride, padding, (1, 1), in_off, out_off, mults, shifts, lo, hi)
        want = oracle_conv(x[0].transpose(1, 2, 0).tolist(), wt.tolist(), bias.tolist(), stride, padding, in_off,
                           out_off, mults.tolist(), shifts.tolist(), lo, hi)
        np.testing.assert_array_equal(got[0].transpose(1, 2, 0), np.array(want), err_msg=f"case {case}")
