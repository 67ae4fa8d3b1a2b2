"""The generated DSP 3x3 depthwise layers of stride 2 with smmlar requantization straight from the NHWC input
(``dw_direct_ok``): no int16 rows, one function for all the channels (``dw_direct_asm``), its pixel pairs' inputs
one LDRSB each, their requantization and stores dsp_depthwise_asm's (``dw_requant_asm``, in its registers); and
the per-channel block it reads (``dw_direct_block``: weights, ra, mult, a start per border class)."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.dsp_depthwise_asm import (DW_ACC0_REG, DW_ACC1_REG, DW_IN_REG, DW_OUT_REG,
                                                           dw_requant_asm, dw_rights)
from mcu_gen.backends.generated.dsp_asm_common import adjust
from mcu_gen.backends.generated.layers import DepthwiseLayer


# Stride 2 straight from the NHWC input ("direct", dw_direct_asm): no int16 rows. At stride 2 the planar path widened
# four input pixels an output (LDRSB + STRH: 8 estimated cycles) before its 6 MACs and 4.5 word loads; here each
# input value of a pixel pair's 3 x 5 window is one LDRSB (pipelined in groups of up to five) feeding every MAC that
# uses it (SMLABB / SMLABT against the channel's nine doubled weights, two to a register), the taps outside the
# input are left out (the accumulator start of each border class holds the rest). In place it is safe: output pixel
# j of a channel overwrites input pixel j, which at stride 2 only outputs before it (or in its own pair) read.
# Measured (M33 model, VWW ops 3, 7, 11, 23): 256.3 k, 147.9 k, 65.5 k, 40.3 k -> 215.2 k, 105.7 k, 55.2 k, 31.7 k
# estimated cycles; an interior pair 13 LDRSB, 18 MACs, 44-45 cycles.
_DV = ["r2", "r3", "r9", "r12", "lr"]  # the input values of a group (r2, r12, lr: dw_requant_asm's temporaries)
_DW = ["r4", "r5", "r6", "r7", "r8"]  # the weights: tap t = 3 ky + kx in half t % 2 of register t // 2
DW_DIRECT_UNROLL = 4  # pixel pairs a pass of a pair loop, where a row has more than DW_DIRECT_FULL like pairs
DW_DIRECT_FULL = 6  # runs of up to this many like pairs unrolled whole


def _direct_frame(l: DepthwiseLayer) -> tuple:
    """(the starts' count, the frame's size, the offset of its channel words): [sp] y's end of a run of rows, [sp, #4]
    y's end of a pair loop, [sp, #8] ra, [sp, #12] mult (where dw_requant_asm reads them), then the starts of the
    border classes, the channel's block and the blocks' end."""
    _, _, ru, cu = l.classes()
    n = len(ru) * len(cu)
    s = 16 + 4 * n
    return n, s + 8, s


def dw_direct_ok(l: DepthwiseLayer) -> bool:
    """Whether the layer runs straight from its NHWC input (dw_direct_asm): stride 2, smmlar requantization, a
    pair's taps and a run's stores within LDRSB's and STRB's immediates."""
    if l.stride != 2 or l.smmlar() is None or l.ow < 1 or l.oh < 1:
        return False
    wc, c = l.w * l.c, l.c
    reach = 2 * wc + 4 * DW_DIRECT_UNROLL * c  # the furthest tap of a pair loop's pass from r0
    return reach <= 4095 and l.oh * l.ow * c <= 65535 and all(0 <= r <= 31 for r in dw_rights(l))


def dw_direct_block(l: DepthwiseLayer) -> np.ndarray:
    """Per channel (7 + starts words): the nine doubled weights as int16 halves of 5 words (tap t = 3 ky + kx in
    half t % 2 of word t // 2; the right shift in word 4's top half), ra, mult, the doubled accumulator start of each
    border class (row class r, column class c at r * columns + c: bias + input_offset * the weights of the taps
    inside)."""
    from mcu_gen.backends.generated.exactness import wrap32

    consts = np.asarray(l.smmlar(), np.int64).reshape(l.c, 3)  # (mult, ra, right)
    w = np.zeros((10, l.c), np.int64)
    w[:9] = l.weights.astype(np.int64).reshape(9, l.c) * 2
    w[9] = consts[:, 2]
    words = (w[0::2] & 0xFFFF) | ((w[1::2] & 0xFFFF) << 16)  # [5, c]
    starts = wrap32(l.init_table().astype(np.int64) * 2)  # [classes, c]
    return np.concatenate([words.T, consts[:, [1, 0]], starts.T], axis=1)


def dw_direct_unit(l: DepthwiseLayer, ky: tuple, cols: list, base: int, starts: list, lead: bool, carry: bool) -> tuple:
    """One pixel pair (or a last single pixel) of a row: (the first loads, to go among the previous unit's stores
    when ``lead``, else at the unit's head; the loads and MACs). ky: the row's taps inside [ky0, ky1); cols: per
    pixel its column taps inside (kx0, kx1); base: r0's offset of the unit's tap (0, 0); starts: the frame offsets
    of the pixels' starts. With one start for both, pixel 1's first MAC adds to pixel 0's start (r10 before its first
    MAC): one load. ``carry``: its column 0's first two values are in r3, r9 (the previous pair's column 4: a pair
    leaves them there, dw_requant_asm's temporaries being r2, r12, lr), two loads fewer."""
    n, wc, c = len(cols), l.w * l.c, l.c
    accs = [DW_ACC0_REG, DW_ACC1_REG][:n]
    col_vals = {}
    for col in range(2 * n + 1):
        for y in range(*ky):
            uses = [(j, 3 * y + col - 2 * j) for j in reversed(range(n)) if cols[j][0] <= col - 2 * j < cols[j][1]]
            if uses:
                col_vals.setdefault(col, []).append((base + y * wc + col * c, uses))
    first_col = 2 if n == 2 else 1
    held = col_vals.get(0, [])[:2] if carry else []
    kept = col_vals.get(4, [])[:2] if n == 2 else []  # the next pair's carry
    g0 = col_vals.get(first_col, [])[:3]
    rest = [v for col in (0, 1, 2, 3, 4) if col != first_col for v in col_vals.get(col, []) if v not in held]
    shared = n == 2 and starts[0] == starts[1] and g0 and g0[0][1][0][0] == 1 and len(g0[0][1]) == 2
    head = [f"ldr {DW_ACC0_REG}, [sp, #{starts[0]}]"]
    head += [] if shared or n == 1 else [f"ldr {DW_ACC1_REG}, [sp, #{starts[1]}]"]
    g0_regs = ["r2", "r12", "lr"]
    first = [f"ldrsb {r}, [{DW_IN_REG}, #{off}]" for r, (off, _) in zip(g0_regs, g0)]
    lead_ins = first[:2] + head[:1] + first[2:3] if lead else []  # r10's start after its store (dw_requant_asm)
    body = ([] if lead else head[:1]) + head[1:] + (first[3:] if lead else first)
    started = set()

    def macs(v, reg):
        for j, t in v[1]:
            addend = DW_ACC0_REG if (j == 1 and shared and j not in started) else accs[j]
            if j == 0 and shared and 1 not in started:
                raise AssertionError("pixel 1's first MAC after pixel 0's")
            started.add(j)
            body.append(f"smlab{'bt'[t % 2]} {accs[j]}, {reg}, {_DW[t // 2]}, {addend}")

    for reg, v in zip(g0_regs, g0):
        macs(v, reg)
    for reg, v in zip(["r3", "r9"], held):
        macs(v, reg)
    plain = [v for v in rest if v not in kept]
    tail = plain[len(plain) - min(3, len(plain)):] if kept else []  # with column 4's first two (into r3, r9)
    front = plain[:len(plain) - len(tail)]
    cut = len(front) % len(_DV)
    groups = ([front[:cut]] if cut else []) + [front[i:i + len(_DV)] for i in range(cut, len(front), len(_DV))]
    groups = [list(zip(_DV, g)) for g in groups]
    if kept:
        groups.append(list(zip(["r2", "r12", "lr"], tail)) + list(zip(["r3", "r9"], kept)))
    for group in groups:  # the loads of a group (pipelined), then their MACs
        body += [f"ldrsb {reg}, [{DW_IN_REG}, #{v[0]}]" for reg, v in group]
        for reg, v in group:
            macs(v, reg)
    return lead_ins, body


def dw_direct_row(l: DepthwiseLayer, rcls: int, start_at: int, unroll: int = DW_DIRECT_UNROLL,
                full: int = DW_DIRECT_FULL) -> tuple:
    """The items of one output row of row class rcls: ("unit", ky, cols, starts, base) pixel pairs (and a last
    single pixel) at r0 offset base, ("loop", ky, cols, starts, passes) runs of more than DW_DIRECT_FULL like pairs
    in a loop of DW_DIRECT_UNROLL a pass (``unroll``, ``full``), ("adjust", d) r0 on by d (offsets within LDRSB's 4095, a loop from r0);
    and r0's advance over the row. r0 at the row's tap (0, 0) of pixel 0, starts: frame offsets from start_at."""
    _, cc, ru, cu = l.classes()
    c, ky = l.c, ru[rcls]
    runs = []
    for ox in range(0, l.ow, 2):
        k = tuple(cc[ox:ox + 2])
        if runs and runs[-1][0] == k:
            runs[-1][1] += 1
        else:
            runs.append([k, 1])
    seq, pos, adv = [], 0, 0
    for k, m in runs:
        cols, starts = [cu[x] for x in k], [start_at + 4 * (rcls * len(cu) + x) for x in k]
        if not seq and m > full:  # a row's first pair loads its column 0: before a loop, whose pairs take it in r3, r9
            seq.append(("unit", ky, cols, starts, pos))
            pos, m = pos + 4 * c, m - 1
        if m > full:
            if pos:
                seq.append(("adjust", pos))
                adv, pos = adv + pos, 0
            passes, m = divmod(m, unroll)
            seq.append(("loop", ky, cols, starts, passes, unroll))
            adv += passes * unroll * 4 * c
        for _ in range(m):
            if pos + 2 * l.w * c + 4 * c > 4095:
                seq.append(("adjust", pos))
                adv, pos = adv + pos, 0
            seq.append(("unit", ky, cols, starts, pos))
            pos += 4 * c
    return seq, adv


def _direct_emit(l: DepthwiseLayer, seq: list, right: int, tag: str, end: list) -> list:
    """dw_direct_row's items as instructions: each unit's first loads among the previous unit's stores within straight
    code; a pair loop with y's end at [sp, #4]; ``end``: loads for among the last unit's stores."""
    c, am, ax = l.c, l.act_min, l.act_max
    out, pending = [], None  # pending: the previous unit's (pixels, loads and MACs), not yet requantized

    def unit(ky, cols, starts, base, carry):
        nonlocal pending
        lead, body = dw_direct_unit(l, ky, cols, base, starts, pending is not None and pending[0] == 2, carry)
        flush(lead)
        pending = (len(cols), body)

    def flush(nxt):
        nonlocal pending
        if pending is not None:
            out.extend(pending[1] + dw_requant_asm(c, pending[0] == 2, am, ax, right, nxt, l.sign))
        else:
            out.extend(nxt)
        pending = None

    for k, item in enumerate(seq):
        if item[0] == "adjust":
            flush([])
            out.extend(adjust(DW_IN_REG, item[1]))
        elif item[0] == "unit":
            unit(*item[1:], k > 0)
        else:
            flush([])
            _, ky, cols, starts, passes, unroll = item
            lab = f".Lu{tag}_{k}"
            out += [f"movw r2, #{passes * unroll * len(cols) * c}", f"add r2, {DW_OUT_REG}, r2", "str r2, [sp, #4]",
                    f"{lab}:"]
            for i in range(unroll):
                unit(ky, cols, starts, 4 * c * i, True)  # dw_direct_row: a loop never comes first
            flush(["ldr r2, [sp, #4]"])
            out += adjust(DW_IN_REG, 4 * c * unroll) + [f"cmp {DW_OUT_REG}, r2", f"bne {lab}"]
    flush(list(end))
    return out


def _back(reg: str, n: int) -> list:
    """reg -= n (0 <= n < 2^32): SUBW, or MOVW (and MOVT) into r2 and SUB."""
    if n <= 4095:
        return [f"subw {reg}, {reg}, #{n}"] if n else []
    return [f"movw r2, #{n & 0xFFFF}"] + ([f"movt r2, #{n >> 16}"] if n > 0xFFFF else []) + [f"sub {reg}, {reg}, r2"]


def dw_direct_asm(l: DepthwiseLayer, rights: list) -> list:
    """The body of the layer's function straight from its NHWC input (dw_direct_ok):
        void direct(const int8_t* in, int8_t* out, const uint32_t* block)
    per channel (block: dw_direct_block) the weights in r4-r8, ra, mult and the starts copied to the frame
    (_direct_frame), then the output rows of its right shift's code: per run of rows of one border class a loop over
    its rows (y's end at [sp]), r0 at the row's virtual tap (0, 0) (the taps outside the input never read), 2 W C
    bytes on a row, r1 at the channel's output, one byte a pixel on (STRB's post-increment); both back to the next
    channel at the end (no frame words for them)."""
    nstart, frame, s = _direct_frame(l)
    words = 7 + nstart
    rc, _, _, _ = l.classes()
    wc, c = l.w * l.c, l.c
    out = ["push {r4, r5, r6, r7, r8, r9, r10, r11, lr}", f"sub sp, #{frame}", f"str r2, [sp, #{s}]"]
    out += adjust("r2", 4 * words * c) + [f"str r2, [sp, #{s + 4}]"] + adjust(DW_IN_REG, -(l.pad_h * wc + l.pad_w * c))
    out += [".Lch%=:", f"ldr r3, [sp, #{s}]", "ldm r3!, {r4, r5, r6, r7, r8}"]
    for i in range(2 + nstart):
        out += [f"ldr r2, [r3, #{4 * i}]", f"str r2, [sp, #{8 + 4 * i}]"]
    out.append("lsr r2, r8, #16")
    for rt in rights[1:]:
        out += [f"cmp r2, #{rt}", f"beq .Lr%=_{rt}"]
    for rt in rights:
        tag = f"%=_{rt}"
        out.append(f".Lr{tag}:")
        for k, (oy0, oy1, rcls) in enumerate(DepthwiseLayer.runs(rc)):
            once = oy1 - oy0 == 1  # a row run once a channel (the top row): its like pairs in a loop of one a pass
            seq, adv = dw_direct_row(l, rcls, 16, *((1, 1) if once else ()))
            step = adjust(DW_IN_REG, 2 * wc - adv)
            if once:
                out += _direct_emit(l, seq, rt, f"{tag}_{k}", []) + step
                continue
            lab = f".Lrow{tag}_{k}"
            out += [f"movw r2, #{(oy1 - oy0) * l.ow * c}", f"add r2, {DW_OUT_REG}, r2", "str r2, [sp]", f"{lab}:"]
            out += _direct_emit(l, seq, rt, f"{tag}_{k}", ["ldr r2, [sp]"]) + step
            out += [f"cmp {DW_OUT_REG}, r2", f"bne {lab}"]
        out += ["b .Lnext%="] if rt != rights[-1] else []
    out += [".Lnext%=:"] + _back(DW_IN_REG, l.oh * 2 * wc - 1)  # r0 and r1 to the next channel
    out += _back(DW_OUT_REG, l.oh * l.ow * c - 1)
    out += [f"ldr r3, [sp, #{s}]", f"ldr r2, [sp, #{s + 4}]", f"adds r3, #{4 * words}", f"str r3, [sp, #{s}]",
            "cmp r3, r2", "bne .Lch%="]
    return out + [f"add sp, #{frame}", "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}"]
