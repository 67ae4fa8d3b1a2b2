"""Register-level pieces the generated DSP assembly (Cortex-M33, M4) shares: the smmlar requantization's multiply
(``smmlar_asm``) and int8 saturation (``clamp_asm``), a register moved by immediates (``adjust``), and addresses in a
GEMM block's weight stream (``Stream``). The GEMM (dsp_gemm_asm.py and its blocks) and the depthwise rows
(dsp_depthwise_asm.py, dsp_depthwise_direct_asm.py) use them."""
from __future__ import annotations


def clamp_asm(reg: str, act_min: int, act_max: int, right: int | None = None) -> list:
    """Saturation to int8 (after an arithmetic right shift by the immediate ``right``, when given), then
    the activation range."""
    out = [f"ssat {reg}, #8, {reg}" + (f", asr #{right}" if right is not None else "")]
    if act_min > -128:
        out += [f"cmp {reg}, #{act_min}", "it lt", f"movlt {reg}, #{act_min}"]
    if act_max < 127:
        out += [f"cmp {reg}, #{act_max}", "it gt", f"movgt {reg}, #{act_max}"]
    return out


def smmlar_asm(a: str, mult: str, ra: str, tmp: str, sign: bool = True) -> list:
    """a = SMMLAR a, mult, ra + (a >> 31): the smmlar requantization's multiply with its sign term in tmp, or
    without it (``sign`` False: under a fused ReLU, exactness.sign_free) straight from ra."""
    if not sign:
        return [f"smmlar {a}, {a}, {mult}, {ra}"]
    return [f"add {tmp}, {ra}, {a}, asr #31", f"smmlar {a}, {a}, {mult}, {tmp}"]


def adjust(reg: str, delta: int) -> list:
    """reg += delta in ADDW/SUBW steps of at most 4095."""
    out = []
    while delta:
        step = max(-4095, min(4095, delta))
        out.append(f"{'addw' if step > 0 else 'subw'} {reg}, {reg}, #{abs(step)}")
        delta -= step
    return out


class Stream:
    """Addresses in the weight stream for the two-row block: r1 moves inside the block (ADDW/SUBW) only
    when an offset leaves LDR's immediate range; `pos` is r1's offset from the block's start."""

    def __init__(self, out: list):
        self.out, self.pos = out, 0

    def at(self, off: int) -> str:
        d = off - self.pos
        if d < -255 or d > 4095:
            self.out += adjust("r1", d)
            self.pos, d = off, 0
        return f"[r1, #{d}]"

    def ld(self, reg: str, off: int):
        """LDR reg from the block's byte offset off (after r1 moved, if it must)."""
        addr = self.at(off)
        self.out.append(f"ldr {reg}, {addr}")

    def to(self, off: int):
        self.out += adjust("r1", off - self.pos)
        self.pos = off
