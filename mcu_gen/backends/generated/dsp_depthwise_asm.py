"""The generated DSP 3x3 depthwise layers' geometry choices (the window of rows of an in-place layer, the
planar path) and the planar path's assembly: per right shift of the channels a rows function
(``dw_rows_asm``), or, where the buffer holds every row the layer reads, one function for all the channels
(``dw_all_asm``); their output rows in pixel pairs, or at stride 1 where it pays for its code (``dw_blocks``) two
rows at a time in 2x2 blocks. Stride-2 layers with smmlar requantization skip the int16 rows: one function for all
the channels reads the NHWC input itself (``dw_direct_asm``)."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.dsp_gemm_asm import adjust, clamp_asm, smmlar_asm
from mcu_gen.backends.generated.layers import DepthwiseLayer


DW_WINDOW_STACK_BYTES = 528  # an in-place depthwise layer's window of rows on the stack (KWS's 26 rows of 5 x 4)


def dw_window(l: DepthwiseLayer) -> tuple:
    """(rows, argument, groups) of an in-place depthwise layer's window of input rows (DwWindow: rows of W
    pixels x 4 * groups channels): one group of 4 channels a pass (dw_pixels' fastest form: VWW's 48x48x8
    layer took 574 k instructions with one group a pass, 633 k with two; KWS's four 25x5x64 layers 50 k more
    with four) and as many rows (up to the H + pad rows of the whole input) as the variant's scratch tensor
    (argument 13, H * W bytes, planned in the arena) or DW_WINDOW_STACK_BYTES of stack (argument None)
    hold, the more rows (fewer slides), the scratch on a tie; three rows on the stack where neither holds
    three. (0, None, 1) for a layer not in place."""
    if not l.inplace_ok:
        return 0, None, 1
    row, whole = l.w * 4, l.h + l.pad_h
    in_scratch, on_stack = min(whole, l.scratch_bytes // row), min(whole, DW_WINDOW_STACK_BYTES // row)
    if in_scratch >= 3 and in_scratch >= on_stack:
        return max(3, in_scratch), 13, 1
    return max(3, on_stack), None, 1


DW_PLANE_MIN_W = 3
DW_PLANE_STRIDES = (1, 2)


def dw_plane(l: DepthwiseLayer) -> tuple | None:
    """(rows, argument, row length) of the int16 rows of one channel a planar depthwise layer keeps
    (dsp_prelude.h: DwPlane, dw_planar): rows of kRow entries (the padded input row, and the words the
    last pair of output pixels reads), as many rows (up to all the layer reads) as the in-place variant's
    scratch tensor (argument 13) or DW_WINDOW_STACK_BYTES of stack hold, the more rows the better, the
    scratch on a tie. None (the NHWC path, dw_pixels) where neither holds three rows, for strides other than
    1 and 2 and for rows under DW_PLANE_MIN_W pixels (VWW's 3x3x256 layer: 60.1 k instructions planar,
    61.3 k NHWC)."""
    if l.stride not in DW_PLANE_STRIDES or l.w < DW_PLANE_MIN_W or not -32768 <= -l.in_offset < 32768:
        return None
    row = max(l.pad_w + l.w, l.ow + l.ow % 2 + 2 if l.stride == 1 else 2 * l.ow + 2)
    row += row % 2
    need = (l.oh - 1) * l.stride + 3
    on_stack = min(need, DW_WINDOW_STACK_BYTES // (2 * row))
    in_scratch = min(need, l.scratch_bytes // (2 * row)) if l.inplace_ok else 0
    if in_scratch >= 3 and in_scratch >= on_stack:
        return in_scratch, 13, row
    if on_stack >= 3:
        return on_stack, None, row
    return None


# The planar rows in assembly: registers of the function below. r3 holds the channel's accumulator start (the
# addend of each pixel's first MAC: no load), [sp, #8] and [sp, #12] its ra and mult (copied from the block
# at entry), the right shift is an immediate of SSAT: one function per right shift of the layer's channels.
_P, _Y, _S, _W, _A0, _A1, _T = "r0", "r1", "r3", ["r4", "r5", "r6", "r7", "r8", "r9"], "r10", "r11", ["r2", "r12", "lr"]
_RA, _MULT = "[sp, #8]", "[sp, #12]"
DW_ROWS_UNROLL = 8  # pairs of output pixels per pass of the pair loop (all of a row's pairs when at most 12)
DW_ROWS_FULL = 12  # rows of up to this many pairs unrolled whole (VWW's 24-pixel rows: 2 KB a function more than
# a loop of 4 pairs, 0.5 estimated cycles an output less)


def _dw_first(stride2: bool, r: int) -> list:
    """The first three words a pixel pair (one pixel: stride 1's form) reads, r0 moved past them: row 0's
    u = [x0 x1], v = [x2 x3] and row 1's u (stride 1), row 0's three words (stride 2)."""
    t0, t1, t2 = _T
    if stride2:
        return [f"ldr {t0}, [{_P}], #8", f"ldr {t1}, [{_P}, #-4]", f"ldr {t2}, [{_P}]"]
    return [f"ldr {t0}, [{_P}], #4", f"ldr {t1}, [{_P}]", f"ldr {t2}, [{_P}, #{r - 4}]"]


def _dw_pair_macs(r: int, two: bool, stride2: bool) -> list:
    """After _dw_first's loads (in r2, r12, lr): the rest of the loads (grouped, each but a group's last
    pipelined) and the MACs of one output pixel (a0) or two (a0, a1), the start r3 their first MACs' addend.
    Stride 1, per row of taps: a0 += SMLAD u, w01 + SMLABT v, w12; a1 += SMLATB u, w01 + SMLAD v, w12.
    Stride 2 (pixel 1 two entries on), per row the words u, v, t: a0 += SMLAD u, w01 + SMLABT v, w12,
    a1 += SMLAD v, w01 + SMLABT t, w12."""
    t0, t1, t2 = _T
    w = _W
    if two and stride2:
        out = [f"smlad {_A1}, {t1}, {w[0]}, {_S}", f"smlad {_A0}, {t0}, {w[0]}, {_S}",
               f"smlabt {_A0}, {t1}, {w[1]}, {_A0}", f"smlabt {_A1}, {t2}, {w[1]}, {_A1}"]
        for k in (1, 2):
            o = k * r - 8
            out += [f"ldr {t0}, [{_P}, #{o}]", f"ldr {t1}, [{_P}, #{o + 4}]", f"ldr {t2}, [{_P}, #{o + 8}]",
                    f"smlad {_A0}, {t0}, {w[2 * k]}, {_A0}", f"smlabt {_A0}, {t1}, {w[2 * k + 1]}, {_A0}",
                    f"smlad {_A1}, {t1}, {w[2 * k]}, {_A1}", f"smlabt {_A1}, {t2}, {w[2 * k + 1]}, {_A1}"]
        return out
    out = ([f"smlatb {_A1}, {t0}, {w[0]}, {_S}"] if two else []) + [f"smlad {_A0}, {t0}, {w[0]}, {_S}",
                                                                      f"smlabt {_A0}, {t1}, {w[1]}, {_A0}"]
    out += [f"smlad {_A1}, {t1}, {w[1]}, {_A1}"] if two else []
    out += [f"smlad {_A0}, {t2}, {w[2]}, {_A0}"] + ([f"smlatb {_A1}, {t2}, {w[2]}, {_A1}"] if two else [])
    out += [f"ldr {t0}, [{_P}, #{r}]", f"ldr {t1}, [{_P}, #{2 * r - 4}]", f"ldr {t2}, [{_P}, #{2 * r}]"]
    out += [f"smlabt {_A0}, {t0}, {w[3]}, {_A0}"] + ([f"smlad {_A1}, {t0}, {w[3]}, {_A1}"] if two else [])
    out += [f"smlad {_A0}, {t1}, {w[4]}, {_A0}"] + ([f"smlatb {_A1}, {t1}, {w[4]}, {_A1}"] if two else [])
    out += [f"smlabt {_A0}, {t2}, {w[5]}, {_A0}"] + ([f"smlad {_A1}, {t2}, {w[5]}, {_A1}"] if two else [])
    return out


def smmlar_keep_ra(a: str, mult: str, ra: str, tmp: str, sign: bool = True) -> list:
    """a = SMMLAR a, mult, ra + (a >> 31) with ra left in its register for the next output: SMMLAR into tmp, then
    a = tmp + (a >> 31) (a 2^32 step of the 64-bit sum: the same value); ``sign`` False (under a fused ReLU,
    exactness.sign_free) SMMLAR a, a, mult, ra alone."""
    if not sign:
        return [f"smmlar {a}, {a}, {mult}, {ra}"]
    return [f"smmlar {tmp}, {a}, {mult}, {ra}", f"add {a}, {tmp}, {a}, asr #31"]


def _dw_requant_asm(c: int, two: bool, act_min: int, act_max: int, right: int, following: list | None,
                    sign: bool = True) -> list:
    """a0 (and a1) requantized and stored c bytes apart at r1, r1 on: ra and mult loaded once for both,
    SMMLAR t, a, mult, ra then a = t + (a >> 31) (the same as SMMLAR with ra + (a >> 31): a 2^32 step of the
    64-bit sum; ``sign`` False, under a fused ReLU: SMMLAR a, a, mult, ra), SSAT with the right shift as its
    immediate. ``following``: the next pixels' first three loads, placed among the stores (each load then
    pipelined with a load or a store)."""
    t0, t1, t2 = _T
    store = (lambda a: [f"strb {a}, [{_Y}], #{c}"]) if c <= 255 else (lambda a: [f"strb {a}, [{_Y}]"] + adjust(_Y, c))
    accs = [_A0, _A1] if two else [_A0]
    out = [f"ldr {t0}, {_RA}", f"ldr {t1}, {_MULT}"]
    for a in accs:
        out += smmlar_keep_ra(a, t1, t0, t2, sign)
    for a in accs:
        out += clamp_asm(a, act_min, act_max, right or None)
    nxt = list(following or [])
    if len(accs) == 2:
        return out + nxt[:2] + store(_A0) + nxt[2:] + store(_A1)
    return out + nxt + store(_A0)


def _dw_chunk(r: int, c: int, pairs: int, odd: bool, act_min: int, act_max: int, right: int, stride2: bool,
              sign: bool = True) -> list:
    """`pairs` pixel pairs (and the odd last pixel) in a row: each pair's requantization holds the next
    one's first loads."""
    units = [True] * pairs + ([False] if odd else [])
    out = _dw_first(stride2 and units[0], r)
    for i, two in enumerate(units):
        nxt = _dw_first(stride2 and units[i + 1], r) if i + 1 < len(units) else None
        out += _dw_pair_macs(r, two, stride2) + _dw_requant_asm(c, two, act_min, act_max, right, nxt, sign)
    return out


# Stride 1 in 2x2 blocks (two output rows x two pixels: dw_rows2_ok): the four input rows' words u = [x0 x1],
# v = [x2 x3] feed four accumulators, 8 loads and one ra, mult for 4 outputs where the pairs took 12 and two. The
# six registers below hold a block's words, its start (loaded from the frame: no register is left for it) and its
# accumulators, their roles moving within a block and back: on entry u0, v0, start, u1, v1 loaded (F free).
_U0, _V0, _S2, _U1, _V1, _F = "r10", "r2", "r3", "r11", "r12", "lr"
_FRAME2 = {"ra": _RA, "mult": _MULT, "start": "[sp, #16]"}  # dw_rows_asm's frame (the start at [sp, #16])
_FRAME_ALL = {"ra": _RA, "mult": _MULT, "start": "[sp, #36]"}  # dw_all_asm's
DW_BLOCKS_UNROLL = 6  # blocks (pixel pairs) of a row pair a pass of the block loop (all when at most DW_BLOCKS_FULL)
DW_BLOCKS_FULL = 6  # row pairs of up to this many blocks unrolled whole


def _dw_block_first(r: int, xb: int, start: str) -> list:
    """A block's (or a two-row pixel's) first five loads at byte xb of the rows at r0: rows 0 and 1's u, v and
    the start, in the order their registers come free in the previous block's stores (_dw_block_requant)."""
    return [f"ldr {_U0}, [{_P}, #{xb}]", f"ldr {_U1}, [{_P}, #{xb + r}]", f"ldr {_V1}, [{_P}, #{xb + r + 4}]",
            f"ldr {_V0}, [{_P}, #{xb + 4}]", f"ldr {_S2}, {start}"]


def _dw_block_macs(r: int, xb: int) -> list:
    """After _dw_block_first: the 24 MACs and the 4 loads of rows 2 and 3 (two at a time, all the registers
    left) of one 2x2 block: top p0 (in r10), p1 (lr); bottom q0 (r3, the start's register), q1 (r2)."""
    w = _W
    u0, v0, s, u1, v1, f = _U0, _V0, _S2, _U1, _V1, _F
    return [f"smlatb {f}, {u0}, {w[0]}, {s}", f"smlad {u0}, {u0}, {w[0]}, {s}",
            f"smlabt {u0}, {v0}, {w[1]}, {u0}", f"smlad {f}, {v0}, {w[1]}, {f}",
            f"smlatb {v0}, {u1}, {w[0]}, {s}", f"smlad {s}, {u1}, {w[0]}, {s}",
            f"smlad {u0}, {u1}, {w[2]}, {u0}", f"smlatb {f}, {u1}, {w[2]}, {f}",
            f"smlabt {u0}, {v1}, {w[3]}, {u0}", f"smlad {f}, {v1}, {w[3]}, {f}",
            f"smlabt {s}, {v1}, {w[1]}, {s}", f"smlad {v0}, {v1}, {w[1]}, {v0}",
            f"ldr {u1}, [{_P}, #{xb + 2 * r}]", f"ldr {v1}, [{_P}, #{xb + 2 * r + 4}]",
            f"smlad {u0}, {u1}, {w[4]}, {u0}", f"smlatb {f}, {u1}, {w[4]}, {f}",
            f"smlad {s}, {u1}, {w[2]}, {s}", f"smlatb {v0}, {u1}, {w[2]}, {v0}",
            f"smlabt {u0}, {v1}, {w[5]}, {u0}", f"smlad {f}, {v1}, {w[5]}, {f}",
            f"smlabt {s}, {v1}, {w[3]}, {s}", f"smlad {v0}, {v1}, {w[3]}, {v0}",
            f"ldr {u1}, [{_P}, #{xb + 3 * r}]", f"ldr {v1}, [{_P}, #{xb + 3 * r + 4}]",
            f"smlad {s}, {u1}, {w[4]}, {s}", f"smlatb {v0}, {u1}, {w[4]}, {v0}",
            f"smlabt {s}, {v1}, {w[5]}, {s}", f"smlad {v0}, {v1}, {w[5]}, {v0}"]


def _dw_block_requant(yb: int, orow: int, c: int, act_min: int, act_max: int, right: int, ra: str, mult: str,
                      following: list, sign: bool = True) -> list:
    """The block's four outputs requantized and stored at r1 + yb (+ c, + orow, + orow + c): ra in r11, mult in
    r12; p0 first by SMMLAR with ra + (p0 >> 31) (the same sum as SMMLAR, then + (a >> 31)), stored, and r10 the
    others' SMMLAR result (ra loaded again). ``following``: up to 5 loads (the next block's first loads),
    three after the last SMMLAR and one after each of the first two stores, each pipelined with a load or
    store; their registers are free by then (r10, r11, r12, then r2, r3). ``sign`` False (under a fused ReLU):
    no sign terms, ra loaded once."""
    t, ra_r, m_r = _U0, _U1, _V1
    out = [f"ldr {ra_r}, {ra}", f"ldr {m_r}, {mult}"] + smmlar_asm(t, m_r, ra_r, ra_r, sign)  # ra_r + sign
    out += clamp_asm(t, act_min, act_max, right or None)
    out += ([f"ldr {ra_r}, {ra}"] if sign else []) + [f"strb {t}, [{_Y}, #{yb}]"]  # ra again where the sign took it
    for a in (_F, _S2, _V0):
        out += smmlar_keep_ra(a, m_r, ra_r, t, sign)
    for a in (_F, _S2, _V0):
        out += clamp_asm(a, act_min, act_max, right or None)
    nxt = list(following)
    stores = [f"strb {_V0}, [{_Y}, #{yb + orow + c}]", f"strb {_S2}, [{_Y}, #{yb + orow}]",
              f"strb {_F}, [{_Y}, #{yb + c}]"]
    out += nxt[:3]
    nxt = nxt[3:]
    for st in stores:
        out.append(st)
        if nxt:
            out.append(nxt.pop(0))
    return out


def _dw_col2(r: int, xb: int, yb: int, orow: int, act_min: int, act_max: int, right: int, ra: str,
             mult: str, end: list, sign: bool = True) -> list:
    """After _dw_block_first: an odd last pixel of a row pair (two outputs: p0 in r10, q0 in r3), stored at
    r1 + yb and r1 + yb + orow; ``end``: a load placed before the last store."""
    w = _W
    u0, v0, s, u1, v1, f = _U0, _V0, _S2, _U1, _V1, _F
    out = [f"smlad {u0}, {u0}, {w[0]}, {s}", f"smlabt {u0}, {v0}, {w[1]}, {u0}", f"smlad {s}, {u1}, {w[0]}, {s}",
           f"smlad {u0}, {u1}, {w[2]}, {u0}", f"smlabt {u0}, {v1}, {w[3]}, {u0}", f"smlabt {s}, {v1}, {w[1]}, {s}",
           f"ldr {u1}, [{_P}, #{xb + 2 * r}]", f"ldr {v1}, [{_P}, #{xb + 2 * r + 4}]",
           f"ldr {v0}, [{_P}, #{xb + 3 * r}]", f"ldr {f}, [{_P}, #{xb + 3 * r + 4}]",
           f"smlad {u0}, {u1}, {w[4]}, {u0}", f"smlabt {u0}, {v1}, {w[5]}, {u0}",
           f"smlad {s}, {u1}, {w[2]}, {s}", f"smlabt {s}, {v1}, {w[3]}, {s}",
           f"smlad {s}, {v0}, {w[4]}, {s}", f"smlabt {s}, {f}, {w[5]}, {s}",
           f"ldr {u1}, {ra}", f"ldr {v1}, {mult}"]
    out += smmlar_keep_ra(u0, v1, u1, v0, sign) + smmlar_keep_ra(s, v1, u1, v0, sign)
    out += clamp_asm(u0, act_min, act_max, right or None) + clamp_asm(s, act_min, act_max, right or None)
    return out + [f"strb {u0}, [{_Y}, #{yb}]"] + list(end) + [f"strb {s}, [{_Y}, #{yb + orow}]"]


def _dw_blocks(l: DepthwiseLayer, r: int, blocks: int, odd: bool, right: int, frame: dict, end: list) -> list:
    """`blocks` 2x2 blocks (and an odd last pixel's two outputs) of a row pair at r0, r1 (unmoved: offsets),
    each block's stores holding the next one's first loads; ``end``: loads for after the last block."""
    c, orow, am, ax = l.c, l.ow * l.c, l.act_min, l.act_max
    ra, mult, start = frame["ra"], frame["mult"], frame["start"]
    units = blocks + int(odd)
    out = _dw_block_first(r, 0, start) if units else []
    for i in range(blocks):
        xb, yb = 4 * i, 2 * c * i
        nxt = _dw_block_first(r, xb + 4, start) if i + 1 < units else list(end)
        out += _dw_block_macs(r, xb) + _dw_block_requant(yb, orow, c, am, ax, right, ra, mult, nxt, l.sign)
    if odd:
        out += _dw_col2(r, 4 * blocks, 2 * c * blocks, orow, am, ax, right, ra, mult, end, l.sign)
    return out


def dw_rows2_ok(l: DepthwiseLayer, plane: tuple) -> bool:
    """Whether the stride-1 planar rows run in 2x2 blocks (_dw_rows2_loop): the buffer holds the four rows of
    two output rows (DwPlane<kPairs>), every load and store offset of a pass within LDR / STRB's 4095."""
    rows, _, row = plane
    if l.stride != 1 or l.ow < 2 or rows < 4:
        return False
    r, c, orow = 2 * row, l.c, l.ow * l.c
    blocks = l.ow // 2
    per_pass = DW_BLOCKS_UNROLL if blocks > DW_BLOCKS_FULL else blocks
    xb = 4 * per_pass + 4 * (l.ow % 2)
    return xb + 3 * r + 4 <= 4095 and 2 * c * per_pass + c + orow <= 4095


def _mnemonic(ins: str) -> str:
    return ins.split(None, 1)[0]


def _addr_regs(ins: str) -> set:
    return set(ins.split("[", 1)[1].split("]")[0].replace(" ", "").split(",")[:1]) if "[" in ins else set()


def static_cycles(code: list) -> int:
    """Estimated M33 cycles of a straight run of this module's instructions (mcu_gen.device.cycles' model): a
    single load 1 when the next instruction is a load / store single not addressed by its result, else 2; a
    store 1; LDM / PUSH / POP 1 + N; a branch 3 (taken); +1 for a load / store addressed by the register the
    data-processing instruction just before wrote; everything else 1."""
    ins = [i for i in code if not i.endswith(":")]
    single = ("ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "str", "strb", "strh")
    total, prev_written = 0, None
    for k, i in enumerate(ins):
        m = _mnemonic(i)
        if m in single:
            if m.startswith("ldr"):
                rt = i.split(None, 1)[1].split(",")[0].strip()
                nxt = ins[k + 1] if k + 1 < len(ins) else ""
                total += 1 if nxt and _mnemonic(nxt) in single and rt not in _addr_regs(nxt) else 2
            else:
                total += 1
            total += 1 if prev_written is not None and prev_written in _addr_regs(i) else 0
            prev_written = None
            continue
        if m in ("ldm", "push", "pop", "ldmia", "stm", "stmia"):
            total += 1 + i.count(",") + 1 - (1 if m in ("ldm", "ldmia", "stm", "stmia") else 0)
        elif m.startswith("b") and m not in ("bic", "bics"):
            total += 3
        else:
            total += 1
        written = " " in i and not m.startswith(("cmp", "b"))  # the first operand of a data-processing instruction
        prev_written = i.split(None, 1)[1].split(",")[0].strip() if written else None
    return total


def dw_rows2_gain(l: DepthwiseLayer, plane: tuple, rights: list) -> tuple:
    """(estimated cycles saved by the 2x2 blocks, estimated bytes of code they add) for the layer: static_cycles of
    a row pair of blocks against two rows of pixel pairs (per channel, per row pair), and 4 bytes an instruction
    over the rows code of each right shift (the odd last row's code counted where there is one)."""
    row, r, c, blocks = plane[2], 2 * plane[2], l.c, l.ow // 2
    right = rights[0]
    new = _dw_rows2_loop(l, row, right, "", _FRAME2)
    loop = blocks // DW_BLOCKS_UNROLL if blocks > DW_BLOCKS_FULL else 0
    new_c = static_cycles(new)
    if loop:
        body = _dw_blocks(l, r, DW_BLOCKS_UNROLL, False, right, _FRAME2, [f"ldr {_U1}, [sp, #4]"])
        new_c += (loop - 1) * (static_cycles(body) + 6)
    old = _dw_rows_loop(l, row, right, "")
    pairs = l.ow // 2
    old_loop = pairs // DW_ROWS_UNROLL if pairs > DW_ROWS_FULL else 0
    old_c = static_cycles(old)
    if old_loop:
        old_c += (old_loop - 1) * (static_cycles(_dw_chunk(r, c, DW_ROWS_UNROLL, False, l.act_min, l.act_max, right,
                                                           False, l.sign)) + 6)
    odd_code = len(_dw_rows_loop(l, row, right, "", compact=True)) if l.oh % 2 else 0
    saved = c * (l.oh // 2) * (2 * old_c - new_c)
    extra = 4 * len(rights) * (len(new) + odd_code - len(old))
    return saved, extra


# The 2x2 blocks where they save at least this many estimated cycles a byte of code they add (dw_rows2_gain's
# estimates; measured on the M33 model, VWW: the 48x48x8 layer 23.3 k cycles for 0.7 KB, 24x24x32 13.5 k for none,
# the 6x6x128 ones 7.8 k for 0.9 KB (3 right shifts) or 0.6 KB (2); KWS's 25x5x64 layers: 17 k for 1.0 to 1.4 KB each;
# from 8 to 5 once the stride-2 layers ran straight from the input (dw_direct_asm, less code than their planar rows):
# VWW's 12x12x64 (estimate 13.8 k for 1.7 KB) and 3x3x256 (6.1 k for 1.1 KB) layers in.)
DW_BLOCKS_CYCLES_PER_BYTE = 5


def dw_blocks(l: DepthwiseLayer, plane: tuple | None) -> bool:
    """Whether the layer's planar rows run in 2x2 blocks: possible (dw_rows2_ok) and worth their code."""
    if plane is None or l.smmlar() is None or not dw_rows2_ok(l, plane):
        return False
    saved, extra = dw_rows2_gain(l, plane, dw_rights(l))
    return extra <= 0 or saved >= DW_BLOCKS_CYCLES_PER_BYTE * extra


def _dw_rows2_loop(l: DepthwiseLayer, row: int, right: int, tag: str, frame: dict) -> list:
    """The loop over row pairs (label .Lrq + tag) up to y's pair end at [sp]: per pair the blocks (a loop of
    DW_BLOCKS_UNROLL blocks, label .Lbk + tag, where a row has more than DW_BLOCKS_FULL; its count at [sp, #4]),
    r0 and r1 on by two rows at the end."""
    r, c, blocks, odd = 2 * row, l.c, l.ow // 2, l.ow % 2
    loop, rest = (blocks // DW_BLOCKS_UNROLL, blocks % DW_BLOCKS_UNROLL) if blocks > DW_BLOCKS_FULL else (0, blocks)
    t = _T[0]
    out = [f".Lrq{tag}:"]
    if loop:
        out += [f"movs {t}, #{loop}", f"str {t}, [sp, #4]", f".Lbk{tag}:"]
        out += _dw_blocks(l, r, DW_BLOCKS_UNROLL, False, right, frame, [f"ldr {_U1}, [sp, #4]"])
        out += adjust(_P, 4 * DW_BLOCKS_UNROLL) + adjust(_Y, 2 * c * DW_BLOCKS_UNROLL)
        out += [f"subs {_U1}, #1", f"str {_U1}, [sp, #4]", f"bne .Lbk{tag}"]
    end = [f"ldr {_U1}, [sp]"]
    if rest or odd:
        out += _dw_blocks(l, r, rest, bool(odd), right, frame, end)
    else:
        out += end
    out += adjust(_P, 2 * r - 4 * DW_BLOCKS_UNROLL * loop) + adjust(_Y, 2 * l.ow * c - 2 * c * DW_BLOCKS_UNROLL * loop)
    return out + [f"cmp {_Y}, {_U1}", f"bne .Lrq{tag}"]


def dw_rights(l: DepthwiseLayer) -> list:
    """The right shifts of the layer's channels (smmlar), one planar rows function each."""
    return sorted({int(r) for r in np.asarray(l.smmlar()).reshape(l.c, 3)[:, 2]})


def _check(l: DepthwiseLayer, row: int, right: int) -> None:
    if l.ow * l.c > 65535:
        raise ValueError(f"{l.name}: output rows of {l.ow * l.c} bytes (MOVW)")
    if not 0 <= right <= 31:
        raise ValueError(f"{l.name}: a right shift of {right} (SSAT's immediate: 0..31)")
    if 4 * row > 4095:
        raise ValueError(f"{l.name}: planar rows of {row} entries: load offsets past 4095")


# The channel's setup: y's end at [sp] (r2: the row count), ra and mult copied to the frame, the weight
# pairs in r4-r9, the start in r3 (r3: the channel's block).
_SETUP = ["ldr r2, [r3, #28]", "ldr r12, [r3, #32]", f"str r2, {_RA}", f"str r12, {_MULT}",
          "ldm r3, {r4, r5, r6, r7, r8, r9}", "ldr r3, [r3, #24]"]


def _dw_rows_loop(l: DepthwiseLayer, row: int, right: int, tag: str, compact: bool = False) -> list:
    """The loop over the output rows of one channel (labels .Lrow/.Lpair + tag): r0 the buffer rows, r1 y,
    [sp] y past the last row, [sp, #4] the pass count, [sp, #8] ra, [sp, #12] mult, r3 the start, r4-r9
    the weight pairs."""
    r, c, pairs, odd, st = 2 * row, l.c, l.ow // 2, l.ow % 2, l.stride
    am, ax, s2 = l.act_min, l.act_max, st == 2
    out = [f".Lrow{tag}:"]
    unroll = 1 if compact else DW_ROWS_UNROLL
    loop, rest = (pairs // unroll, pairs % unroll) if pairs > (1 if compact else DW_ROWS_FULL) else (0, pairs)
    if loop:
        out += [f"movs {_T[0]}, #{loop}", f"str {_T[0]}, [sp, #4]", f".Lpair{tag}:"]
        out += _dw_chunk(r, c, unroll, False, am, ax, right, s2, l.sign)
        out += [f"ldr {_T[0]}, [sp, #4]", f"subs {_T[0]}, #1", f"str {_T[0]}, [sp, #4]", f"bne .Lpair{tag}"]
    if rest or odd:
        out += _dw_chunk(r, c, rest, bool(odd), am, ax, right, s2, l.sign)
    step = st * r - 4 * st * pairs - 4 * odd  # to the next output row's first buffer row
    if step:
        out += adjust(_P, step)
    end = f"ldr {_T[0]}, [sp]"  # [sp]: y past the last row; before the row's last store (pipelined) when it ends so
    last = max((i for i, ins in enumerate(out) if ins.startswith(("strb", "bne", ".L"))), default=-1)
    if out[last].startswith("strb"):
        out.insert(last, end)
    else:
        out.append(end)
    return out + [f"cmp {_Y}, {_T[0]}", f"bne .Lrow{tag}"]


def dw_rows_asm(l: DepthwiseLayer, plane: tuple, right: int) -> list:
    """The body of the layer's planar rows function for the channels of one right shift (DSP cores, smmlar
    requantization):
        void rows(const int16_t* p, int8_t* y, int32_t rows, const int32_t* k)
    `rows` output rows of one channel, the first from the buffer rows at p (row bytes 2 row apart), the
    next stride buffer rows on; outputs c bytes apart from y, rows ow c apart; k: the channel's block
    (dsp_prelude.h: dw_planar). The pixel pairs of a row are unrolled (DW_ROWS_UNROLL pairs a pass of a
    loop beyond DW_ROWS_FULL), an odd last pixel alone, each one's first loads among the previous one's
    stores; y's end at [sp], the pass count at [sp, #4], the block's ra and mult at [sp, #8], [sp, #12],
    its start in r3. In 2x2 blocks (dw_blocks): the row pairs up to [sp] (y at the last even row), the start at
    [sp, #16], y's end at [sp, #20] for an odd last row (the layer's last: DwPlane<kPairs> calls with an even
    count before it, so a layer of an even row count has no code for it)."""
    row = plane[2]
    _check(l, row, right)
    if dw_blocks(l, plane):  # stride 1: row pairs in 2x2 blocks up to [sp] (y at the last even row), then an odd last
        # row (the layer's last, DwPlane<kPairs> serving an even count before it: a loop over its pixel pairs)
        out = ["push {r2, r4, r5, r6, r7, r8, r9, r10, r11, lr}", "sub sp, #24", f"movw r12, #{l.ow * l.c}",
               "mla lr, r2, r12, r1", "str lr, [sp, #20]", "bic r2, r2, #1", "mla r2, r2, r12, r1", "str r2, [sp]"]
        out += _SETUP + ["str r3, [sp, #16]", "ldr r2, [sp]", "cmp r1, r2", "beq .Lodd%="]
        out += _dw_rows2_loop(l, row, right, "%=", _FRAME2) + [".Lodd%=:"]
        if l.oh % 2:  # an even row count (DwPlane<kPairs>) but for the last call of an odd number of rows
            out += ["ldr r2, [sp, #20]", "cmp r1, r2", "beq .Ldone%=", "str r2, [sp]", "ldr r3, [sp, #16]"]
            out += _dw_rows_loop(l, row, right, "%=", compact=True) + [".Ldone%=:"]
        return out + ["add sp, #28", "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}"]
    out = ["push {r2, r4, r5, r6, r7, r8, r9, r10, r11, lr}", "sub sp, #16", f"movw r12, #{l.ow * l.c}",
           "mla r2, r2, r12, r1", "str r2, [sp]"] + _SETUP
    out += _dw_rows_loop(l, row, right, "%=")
    return out + ["add sp, #20", "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}"]


def dw_all_ok(l: DepthwiseLayer, plane: tuple | None) -> bool:
    """Whether the layer's channels all run in one function in assembly (dw_all_asm): the buffer holds
    every row the layer reads (DwPlane::kWhole) and the widening's offsets are immediates."""
    if plane is None:
        return False
    rows, _, row = plane
    return (rows >= (l.oh - 1) * l.stride + 3 and (l.w - 1) * l.c <= 4095 and 2 * rows * row <= 4095
            and l.oh * l.ow * l.c <= 65535)


def _widen_row_asm(l: DepthwiseLayer, d: int) -> list:
    """One input row of one channel (r0: its first pixel, pixels c bytes apart) widened to int16 at r1 + d:
    four LDRSB, then their four STRH (each load pipelined with the next load or store)."""
    t = ["r2", "r3", "r12", "lr"]
    out = []
    for i in range(0, l.w, 4):
        n = min(4, l.w - i)
        out += [f"ldrsb {t[j]}, [r0, #{(i + j) * l.c}]" for j in range(n)]
        out += [f"strh {t[j]}, [r1, #{d + 2 * (i + j)}]" for j in range(n)]
    return out


def dw_all_asm(l: DepthwiseLayer, plane: tuple, rights: list) -> list:
    """The body of a layer's function for all its channels (the buffer holds every row the layer reads):
        void all(const int8_t* in, int8_t* out, const uint32_t* block, int16_t* buf)
    per channel: its input rows widened into buf (whose padding entries hold -input_offset: dw_planar's
    first fill), then its output rows by the rows loop of its right shift (block word 9); one call and one
    register save for the layer, where the rows functions took one per channel. Frame: [sp] y's end,
    [sp, #4] the pass count, [sp, #8] ra, [sp, #12] mult, [sp, #16] the channel's input, [sp, #20] its
    output, [sp, #24] its block, [sp, #28] buf, [sp, #32] the block's end, [sp, #36] the start of the 2x2
    blocks (dw_blocks: the row pairs, then an odd last row by a loop over its pixel pairs)."""
    rows, _, row = plane
    for rt in rights:
        _check(l, row, rt)
    out = ["push {r4, r5, r6, r7, r8, r9, r10, r11, lr}", "sub sp, #40", "str r0, [sp, #16]", "str r1, [sp, #20]",
           "str r2, [sp, #24]", "str r3, [sp, #28]"] + adjust("r2", 40 * l.c) + ["str r2, [sp, #32]", ".Lch%=:",
           "ldr r0, [sp, #16]", "ldr r1, [sp, #28]"]
    base = 2 * (l.pad_h * row + l.pad_w)
    for iy in range(l.h):
        out += _widen_row_asm(l, base + 2 * iy * row)
        if iy + 1 < l.h:
            out += adjust("r0", l.w * l.c)
    out += ["ldr r3, [sp, #24]", "ldr r2, [r3, #36]"]
    for rt in rights[1:]:  # the first right shift's loop right after
        out += [f"cmp r2, #{rt}", f"beq .Lsetup%=_r{rt}"]
    two = dw_blocks(l, plane)
    for rt in rights:
        tag = f"%=_r{rt}"
        out += [f".Lsetup{tag}:", "ldr r0, [sp, #28]", "ldr r1, [sp, #20]"]
        if two:  # row pairs in 2x2 blocks, then an odd last row
            pairs = l.oh // 2
            out += ([f"movw r12, #{2 * pairs * l.ow * l.c}", "add r2, r1, r12", "str r2, [sp]"] if pairs else [])
            out += _SETUP + ["str r3, [sp, #36]"]
            out += _dw_rows2_loop(l, row, rt, tag, _FRAME_ALL) if pairs else []
            if l.oh % 2:
                out += [f"movw r12, #{l.ow * l.c}", "add r2, r1, r12", "str r2, [sp]", "ldr r3, [sp, #36]"]
                out += _dw_rows_loop(l, row, rt, tag, compact=True)  # once a channel: a loop over its pixel pairs
        else:
            out += [f"movw r12, #{l.oh * l.ow * l.c}", "add r2, r1, r12", "str r2, [sp]"] + _SETUP
            out += _dw_rows_loop(l, row, rt, tag)
        out += ["b .Lnext%="] if rt != rights[-1] else []
    out += [".Lnext%=:", "ldr r0, [sp, #16]", "ldr r1, [sp, #20]", "ldr r3, [sp, #24]", "ldr r2, [sp, #32]",
            "adds r0, #1", "adds r1, #1", "adds r3, #40", "str r0, [sp, #16]", "str r1, [sp, #20]",
            "str r3, [sp, #24]", "cmp r3, r2", "bne .Lch%="]
    return out + ["add sp, #40", "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}"]


# Stride 2 straight from the NHWC input ("direct", dw_direct_asm): no int16 rows. At stride 2 the planar path widened
# four input pixels an output (LDRSB + STRH: 8 estimated cycles) before its 6 MACs and 4.5 word loads; here each
# input value of a pixel pair's 3 x 5 window is one LDRSB (pipelined in groups of up to five) feeding every MAC that
# uses it (SMLABB / SMLABT against the channel's nine doubled weights, two to a register), the taps outside the
# input are left out (the accumulator start of each border class holds the rest). In place it is safe: output pixel
# j of a channel overwrites input pixel j, which at stride 2 only outputs before it (or in its own pair) read.
# Measured (M33 model, VWW ops 3, 7, 11, 23): 256.3 k, 147.9 k, 65.5 k, 40.3 k -> 215.2 k, 105.7 k, 55.2 k, 31.7 k
# estimated cycles; an interior pair 13 LDRSB, 18 MACs, 44-45 cycles.
_DV = ["r2", "r3", "r9", "r12", "lr"]  # the input values of a group (r2, r12, lr: _dw_requant_asm's temporaries)
_DW = ["r4", "r5", "r6", "r7", "r8"]  # the weights: tap t = 3 ky + kx in half t % 2 of register t // 2
DW_DIRECT_UNROLL = 4  # pixel pairs a pass of a pair loop, where a row has more than DW_DIRECT_FULL like pairs
DW_DIRECT_FULL = 6  # runs of up to this many like pairs unrolled whole


def _direct_frame(l: DepthwiseLayer) -> tuple:
    """(the starts' count, the frame's size, the offset of its channel words): [sp] y's end of a run of rows, [sp, #4]
    y's end of a pair loop, [sp, #8] ra, [sp, #12] mult, then the starts of the border classes, the channel's block
    and the blocks' end."""
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


def _direct_unit(l: DepthwiseLayer, ky: tuple, cols: list, base: int, starts: list, lead: bool, carry: bool) -> tuple:
    """One pixel pair (or a last single pixel) of a row: (the first loads, to go among the previous unit's stores
    when ``lead``, else at the unit's head; the loads and MACs). ky: the row's taps inside [ky0, ky1); cols: per
    pixel its column taps inside (kx0, kx1); base: r0's offset of the unit's tap (0, 0); starts: the frame offsets
    of the pixels' starts. With one start for both, pixel 1's first MAC adds to pixel 0's start (r10 before its first
    MAC): one load. ``carry``: its column 0's first two values are in r3, r9 (the previous pair's column 4: a pair
    leaves them there, _dw_requant_asm's temporaries being r2, r12, lr), two loads fewer."""
    n, wc, c = len(cols), l.w * l.c, l.c
    accs = [_A0, _A1][:n]
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
    head = [f"ldr {_A0}, [sp, #{starts[0]}]"] + ([] if shared or n == 1 else [f"ldr {_A1}, [sp, #{starts[1]}]"])
    g0_regs = ["r2", "r12", "lr"]
    first = [f"ldrsb {r}, [{_P}, #{off}]" for r, (off, _) in zip(g0_regs, g0)]
    lead_ins = first[:2] + head[:1] + first[2:3] if lead else []  # r10's start after its store (_dw_requant_asm)
    body = ([] if lead else head[:1]) + head[1:] + (first[3:] if lead else first)
    started = set()

    def macs(v, reg):
        for j, t in v[1]:
            addend = _A0 if (j == 1 and shared and j not in started) else accs[j]
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
        body += [f"ldrsb {reg}, [{_P}, #{v[0]}]" for reg, v in group]
        for reg, v in group:
            macs(v, reg)
    return lead_ins, body


def _direct_row(l: DepthwiseLayer, rcls: int, start_at: int, unroll: int = DW_DIRECT_UNROLL,
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
    """_direct_row's items as instructions: each unit's first loads among the previous unit's stores within straight
    code; a pair loop with y's end at [sp, #4]; ``end``: loads for among the last unit's stores."""
    c, am, ax = l.c, l.act_min, l.act_max
    out, pending = [], None  # pending: the previous unit's (pixels, loads and MACs), not yet requantized

    def unit(ky, cols, starts, base, carry):
        nonlocal pending
        lead, body = _direct_unit(l, ky, cols, base, starts, pending is not None and pending[0] == 2, carry)
        flush(lead)
        pending = (len(cols), body)

    def flush(nxt):
        nonlocal pending
        if pending is not None:
            out.extend(pending[1] + _dw_requant_asm(c, pending[0] == 2, am, ax, right, nxt, l.sign))
        else:
            out.extend(nxt)
        pending = None

    for k, item in enumerate(seq):
        if item[0] == "adjust":
            flush([])
            out.extend(adjust(_P, item[1]))
        elif item[0] == "unit":
            unit(*item[1:], k > 0)
        else:
            flush([])
            _, ky, cols, starts, passes, unroll = item
            lab = f".Lu{tag}_{k}"
            out += [f"movw r2, #{passes * unroll * len(cols) * c}", f"add r2, {_Y}, r2", "str r2, [sp, #4]", f"{lab}:"]
            for i in range(unroll):
                unit(ky, cols, starts, 4 * c * i, True)  # _direct_row: a loop never comes first
            flush(["ldr r2, [sp, #4]"])
            out += adjust(_P, 4 * c * unroll) + [f"cmp {_Y}, r2", f"bne {lab}"]
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
    out += adjust("r2", 4 * words * c) + [f"str r2, [sp, #{s + 4}]"] + adjust(_P, -(l.pad_h * wc + l.pad_w * c))
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
            seq, adv = _direct_row(l, rcls, 16, *((1, 1) if once else ()))
            step = adjust(_P, 2 * wc - adv)
            if once:
                out += _direct_emit(l, seq, rt, f"{tag}_{k}", []) + step
                continue
            lab = f".Lrow{tag}_{k}"
            out += [f"movw r2, #{(oy1 - oy0) * l.ow * c}", f"add r2, {_Y}, r2", "str r2, [sp]", f"{lab}:"]
            out += _direct_emit(l, seq, rt, f"{tag}_{k}", ["ldr r2, [sp]"]) + step + [f"cmp {_Y}, r2", f"bne {lab}"]
        out += ["b .Lnext%="] if rt != rights[-1] else []
    out += [".Lnext%=:"] + _back(_P, l.oh * 2 * wc - 1) + _back(_Y, l.oh * l.ow * c - 1)  # to the next channel
    out += [f"ldr r3, [sp, #{s}]", f"ldr r2, [sp, #{s + 4}]", f"adds r3, #{4 * words}", f"str r3, [sp, #{s}]",
            "cmp r3, r2", "bne .Lch%="]
    return out + [f"add sp, #{frame}", "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}"]
