"""The elementwise add of the MVE generated kernels (cortex_m::quantized_add, equal shapes): which
vector instructions an add layer takes, proven exact on every pair of int8 inputs by running them,
emulated in numpy, against the reference; and those instructions (the loop body emit_mve.py puts
into templates/generated/mve_add_layer.cpp.j2)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcu_gen.backends.generated import exactness
from mcu_gen.quantize.arith import SHIFT_INT8, requantize

# -- elementwise add (cortex_m::quantized_add, equal shapes) --------------------------------------
# out = clamp(requantize(a + b, out_mult, out_shift) + out_zp) with a = requantize((x - x_zp) << 20,
# x_mult, x_shift) and b likewise, 4 elements per vector in a tail-predicated loop (DLSTP.32 /
# LETP: an element count that is not a multiple of 4 ends with a predicated iteration), as
# CMSIS-NN's arm_elementwise_add_s8 does on MVE: VLDRB.S32 of 4 bytes of each operand, one VMLAS
# for (x - zp) << (20 + left shift), VQRDMULH and a rounding right shift per operand, VADD, the
# output's, VADD of the zero point, VMAX/VMIN, VSTRB.32. Every vector reads its 4 elements of
# both operands before it writes its 4 outputs, so the output may lie over either operand.
#
# Which instructions a layer takes is decided at build time by running them, emulated in numpy,
# on every input they can see: the 256 int8 values of each operand, then all 65,536 pairs, against
# the reference's arithmetic (add_reference, = mcu_gen/reference/integer.py's quantized_add); the
# cheapest exact sequence wins (AddPlan). A rounding shift that rounds ties away from zero needs a
# fix-up of negative values (VRSHR rounds half up), unless no tie occurs; a left shift of the output
# (VSHL) is exact unless a sum overflows; the clamps are left out where no value reaches them. A
# layer without an exact sequence stays on the library kernel (its reason in the report's skipped).

I32_MIN, I32_MAX = -2**31, 2**31 - 1
add_reference = exactness.add_reference


wrap_i32 = exactness.wrap_i32  # int64 values wrapped to int32 (two's complement, as the vector lanes hold them)


def _vqrdmulh(q, m: int):
    """VQRDMULH.S32 by a scalar: saturate((2 * q * m + 2^31) >> 32)."""
    return np.clip((np.asarray(q, np.int64) * int(m) + (1 << 30)) >> 31, I32_MIN, I32_MAX)


def _vqrdmlah(acc, q, m: int):
    """VQRDMLAH.S32 (acc in {0, -1} here): saturate((acc * 2^32 + 2 * q * m + 2^31) >> 32)."""
    return np.clip((np.asarray(q, np.int64) * int(m) + np.asarray(acc, np.int64) * 2**31 + (1 << 30)) >> 31,
                   I32_MIN, I32_MAX)


def _vrshr(q, n: int):
    """VRSHR.S32 #n (1..32): (q + 2^(n - 1)) >> n without overflow."""
    return (np.asarray(q, np.int64) + (1 << (n - 1))) >> n


# A requantization of a vector register by multiplier m and right shift r, variants cheapest first:
# "mul" (r = 0: VQRDMULH only), "plain" (VQRDMULH, VRSHR: ties rounded up), "sign" (VSHR #31 of the
# input, VQRDMLAH onto it, VRSHR: negative inputs rounded half down), "fixup" (VQRDMULH, then the
# sign of the product added before VRSHR: arm_nn_requantize's ties away from zero, for any multiplier).
# One table drives both what is emitted and what is proven: each step is (mnemonic, destination,
# source, operand) over the registers x (the value), t (a temporary), m (the multiplier) and the
# immediates #31 / #r; requant_asm prints the steps, requant_emulated runs them with _STEP_SEMANTICS.
REQUANT_SEQUENCES = {
    "mul": (("vqrdmulh.s32", "x", "x", "m"),),
    "plain": (("vqrdmulh.s32", "x", "x", "m"), ("vrshr.s32", "x", "x", "#r")),
    "sign": (("vshr.s32", "t", "x", "#31"), ("vqrdmlah.s32", "t", "x", "m"), ("vrshr.s32", "x", "t", "#r")),
    "fixup": (("vqrdmulh.s32", "x", "x", "m"), ("vshr.s32", "t", "x", "#31"), ("vadd.i32", "x", "x", "t"),
              ("vrshr.s32", "x", "x", "#r")),
}
REQUANT_VARIANTS = tuple(REQUANT_SEQUENCES)

# mnemonic -> (destination's old value, source, operand) -> destination's new value (int64 lanes)
_STEP_SEMANTICS = {
    "vqrdmulh.s32": lambda d, a, b: _vqrdmulh(a, b),
    "vqrdmlah.s32": lambda d, a, b: _vqrdmlah(d, a, b),
    "vrshr.s32": lambda d, a, n: _vrshr(a, n),
    "vshr.s32": lambda d, a, n: np.asarray(a, np.int64) >> n,
    "vadd.i32": lambda d, a, b: wrap_i32(np.asarray(a, np.int64) + b),
}


def requant_emulated(v, m: int, r: int, variant: str):
    """REQUANT_SEQUENCES[variant] run in numpy on the int32 lanes v (multiplier m, right shift r)."""
    regs = {"x": np.asarray(v, np.int64), "t": None, "m": int(m), "#31": 31, "#r": r}
    for mnemonic, dst, src, operand in REQUANT_SEQUENCES[variant]:
        regs[dst] = _STEP_SEMANTICS[mnemonic](regs[dst], regs[src], regs[operand])
    return regs["x"]


def requant_asm(x: str, t: str, m: str, r: int, variant: str) -> list:
    """REQUANT_SEQUENCES[variant] as instructions on register x (t a temporary, m the multiplier's register)."""
    names = {"x": x, "t": t, "m": m, "#31": "#31", "#r": f"#{r}"}
    return [f"{mnemonic} {names[dst]}, {names[src]}, {names[operand]}"
            for mnemonic, dst, src, operand in REQUANT_SEQUENCES[variant]]


def _variants(shift: int) -> tuple:
    return ("mul",) if shift >= 0 else REQUANT_VARIANTS[1:]


@dataclass
class AddPlan:
    """The vector sequence of one add layer, proven exact on every pair of int8 inputs."""
    scale_a: int  # 2^(20 + left shift) of operand a
    scale_b: int
    variant_a: str
    variant_b: str
    out_left: int  # VSHL of the sum before the output requantization (0: none)
    variant_out: str
    clamp_min: bool
    clamp_max: bool
    add_zp: bool  # VADD of the output zero point (none when it is 0)

    @property
    def instructions_per_vector(self) -> int:
        cost = {variant: len(steps) for variant, steps in REQUANT_SEQUENCES.items()}
        return (2 + 2 + cost[self.variant_a] + cost[self.variant_b] + 1 + (self.out_left > 0) + cost[self.variant_out]
                + self.add_zp + self.clamp_min + self.clamp_max + 1 + 1)  # loads, VMLAS x2, ..., clamps, VSTRB, LETP

    def describe(self) -> str:
        return (f"a: {self.variant_a}, b: {self.variant_b}, out: {'VSHL, ' if self.out_left else ''}{self.variant_out}"
                f"{', VMAX' if self.clamp_min else ''}{', VMIN' if self.clamp_max else ''}")


def _operand_plan(zp: int, mult: int, shift: int):
    """(scale, variant, values of a for x = -128..127) of one operand, or why it has no exact vector form."""
    x = np.arange(-128, 128, dtype=np.int64)
    left = max(shift, 0)
    if SHIFT_INT8 + left > 30 or int(np.abs(x - zp).max()) << (SHIFT_INT8 + left) >= 2**31:
        return "an operand's (x - zero point) << (20 + left shift) exceeds 32 bits"
    if shift < -31:
        return "an operand's right shift exceeds 31"
    scale = 1 << (SHIFT_INT8 + left)
    v = (x - zp) * scale  # = VMLAS x * scale + (-zp * scale), no wrap (checked above)
    want = requantize((x - zp) << SHIFT_INT8, mult, shift)
    for variant in _variants(shift):
        got = requant_emulated(v, mult, -shift, variant)
        if np.array_equal(got, want):
            return scale, variant, got
    return "no exact vector requantization of an operand"


def add_plan(l) -> AddPlan | str:
    """The cheapest exact vector sequence for AddLayer ``l`` (every pair of int8 inputs checked
    against the integer reference), or why there is none."""
    pa = _operand_plan(l.a_zp, l.a_mult, l.a_shift)
    pb = _operand_plan(l.b_zp, l.b_mult, l.b_shift)
    for p in (pa, pb):
        if isinstance(p, str):
            return p
    if l.out_shift < -31:
        return "the output's right shift exceeds 31"
    x, y = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    want = add_reference(x, y, l.params)
    s = wrap_i32(pa[2][:, None] + pb[2][None, :])  # VADD
    left = max(l.out_shift, 0)
    if left:
        s = wrap_i32(s << left)  # VSHL #left
    for variant in _variants(l.out_shift):
        r = wrap_i32(requant_emulated(s, l.out_mult, -l.out_shift, variant) + l.out_zp)
        for clamp_min, clamp_max in ((False, False), (True, False), (False, True), (True, True)):
            o = np.maximum(r, l.act_min) if clamp_min else r
            o = np.minimum(o, l.act_max) if clamp_max else o
            if np.array_equal(((o + 128) & 0xFF) - 128, want):  # VSTRB.32 keeps the low byte
                return AddPlan(pa[0], pb[0], pa[1], pb[1], left, variant, clamp_min, clamp_max, l.out_zp != 0)
    return "no exact vector form of the output requantization"


def add_asm(s, p: AddPlan) -> list:
    """The loop body of AddLayer ``s`` with plan ``p``: pointers a, b, y; q registers qa, qb, qt (temporaries),
    ka, kb (scales), lo, hi."""
    lines = ["vldrb.s32 %q[qa], [%[a]], #4", "vldrb.s32 %q[qb], [%[b]], #4", "vmlas.u32 %q[qa], %q[ka], %[ca]"]
    lines += requant_asm("%q[qa]", "%q[qt]", "%[ma]", -s.a_shift, p.variant_a)
    lines.append("vmlas.u32 %q[qb], %q[kb], %[cb]")
    lines += requant_asm("%q[qb]", "%q[qt]", "%[mb]", -s.b_shift, p.variant_b)
    lines.append("vadd.i32 %q[qa], %q[qa], %q[qb]")
    if p.out_left:
        lines.append(f"vshl.i32 %q[qa], %q[qa], #{p.out_left}")
    lines += requant_asm("%q[qa]", "%q[qt]", "%[mo]", -s.out_shift, p.variant_out)
    if p.add_zp:
        lines.append("vadd.i32 %q[qa], %q[qa], %[zo]")
    if p.clamp_min:
        lines.append("vmax.s32 %q[qa], %q[qa], %q[lo]")
    if p.clamp_max:
        lines.append("vmin.s32 %q[qa], %q[qa], %q[hi]")
    lines.append("vstrb.32 %q[qa], [%[y]], #4")
    return lines
