"""The generated DSP 3x3 depthwise layers' geometry choices (the window of rows of an in-place layer, the
planar path) and the planar path's assembly: per right shift of the channels a rows function
(``dw_rows_asm``), or, where the buffer holds every row the layer reads, one function for all the channels
(``dw_all_asm``); their output rows in pixel pairs, or at stride 1 where it pays for its code (``dw_blocks``) two
rows at a time in 2x2 blocks; a pixel pair's requantization (``dw_requant_asm``), which the stride-2 layers that
skip the int16 rows share (dsp_depthwise_direct_asm.py)."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.dsp_asm_common import adjust, clamp_asm, smmlar_asm
from mcu_gen.backends.generated.layers import INPLACE_GROUP_BYTES, DepthwiseLayer


# The largest depthwise kernel the generated kernels take (7x7; the DSP cores unroll its interior class's taps,
# dw_pixels, and each kernel row of its border classes, dw_pixels_border).
MAX_DW_TAPS = 49
DW_WINDOW_STACK_BYTES = 528  # an in-place depthwise layer's window of rows on the stack (KWS's 26 rows of 5 x 4)


def dw_window(l: DepthwiseLayer) -> tuple:
    """(rows, argument, groups) of an in-place depthwise layer's window of input rows (DwWindow: rows of W
    pixels x 4 * groups channels): one group of 4 channels a pass (dw_pixels' fastest form: VWW's 48x48x8
    layer took 574 k instructions with one group a pass, 633 k with two; KWS's four 25x5x64 layers 50 k more
    with four) and as many rows (up to the H + pad rows of the whole input) as the variant's scratch tensor
    (argument 13, H * W bytes, planned in the arena) or DW_WINDOW_STACK_BYTES of stack (argument None)
    hold, the more rows (fewer slides), the scratch on a tie; kh rows (a kernel's) on the stack where neither
    holds kh. (0, None, 1) for a layer not in place."""
    if not l.inplace_ok:
        return 0, None, 1
    row, whole, k = l.w * 4, l.h + l.pad_h, l.kh
    in_scratch, on_stack = min(whole, l.scratch_bytes // row), min(whole, DW_WINDOW_STACK_BYTES // row)
    if in_scratch >= k and in_scratch >= on_stack:
        return max(k, in_scratch), 13, 1
    return max(k, on_stack), None, 1


def dw_cols(l: DepthwiseLayer) -> int:
    """Output pixels per chunk of an in-place depthwise layer over one input row (a Conv1d's: H 1, a kernel of one
    row) whose window of the whole row fits neither the scratch tensor nor INPLACE_GROUP_BYTES of stack: the input
    columns of a chunk (DwCols, one group of 4 channels) in DW_WINDOW_STACK_BYTES of stack, the columns the chunk
    before read too kept. 0 where the layer takes a window of rows (dw_window) or is not in place."""
    if not (l.inplace_ok and l.h == 1 and l.kh == 1 and (l.c % 4 == 0 or l.tail)):
        return 0
    if l.scratch_bytes >= l.w * 4 or l.w * 4 <= INPLACE_GROUP_BYTES:
        return 0
    cols = DW_WINDOW_STACK_BYTES // 4
    return max(1, min(l.ow, (cols - l.kw) // l.sw + 1))


DW_PLANE_MIN_W = 3
DW_PLANE_STRIDES = (1, 2)
# A layer whose channel count is not a multiple of 4 has no NHWC path (dw_pixels reads words of 4 channels): where
# DW_WINDOW_STACK_BYTES holds fewer than three of its planar rows, three rows on the stack up to this many bytes (the
# NHWC in-place window's INPLACE_GROUP_BYTES); rows under DW_PLANE_MIN_W pixels planar too.
DW_ODD_STACK_BYTES = INPLACE_GROUP_BYTES


def dw_plane(l: DepthwiseLayer) -> tuple | None:
    """(rows, argument, row length) of the int16 rows of one channel a planar depthwise layer keeps
    (dsp_prelude.h: DwPlane, dw_planar): rows of kRow entries (the padded input row, and the words the
    last pair of output pixels reads), as many rows (up to all the layer reads) as the in-place variant's
    scratch tensor (argument 13) or DW_WINDOW_STACK_BYTES of stack hold, the more rows the better, the
    scratch on a tie. None (the NHWC path, dw_pixels) where neither holds three rows, for kernels other than 3x3
    of one stride and padding <= 1 (DepthwiseLayer.is_3x3), for strides other than 1 and 2 and for rows under
    DW_PLANE_MIN_W pixels (VWW's 3x3x256 layer: 60.1 k instructions planar, 61.3 k NHWC). Channels not a multiple of 4 (no NHWC path): any width, and three rows in up to
    DW_ODD_STACK_BYTES of stack where neither holds three."""
    odd = l.c % 4 != 0
    if not l.is_3x3 or l.stride not in DW_PLANE_STRIDES or (l.w < DW_PLANE_MIN_W and not odd):
        return None
    if not -32768 <= -l.in_offset < 32768:
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
    if odd and 3 * 2 * row <= DW_ODD_STACK_BYTES:
        return 3, None, row
    return None


# The planar rows in assembly: registers of the function below. r3 holds the channel's accumulator start (the
# addend of each pixel's first MAC: no load), [sp, #8] and [sp, #12] its ra and mult (copied from the block
# at entry), the right shift is an immediate of SSAT: one function per right shift of the layer's channels.
# The registers dw_requant_asm shares with the stride-2 path (dsp_depthwise_direct_asm): the input pointer (here
# the int16 rows, there the NHWC input), the output pointer y, the accumulators of a pixel pair.
DW_IN_REG, DW_OUT_REG, DW_ACC0_REG, DW_ACC1_REG = "r0", "r1", "r10", "r11"
_S, _W, _T = "r3", ["r4", "r5", "r6", "r7", "r8", "r9"], ["r2", "r12", "lr"]
_RA, _MULT = "[sp, #8]", "[sp, #12]"
DW_ROWS_UNROLL = 8  # pairs of output pixels per pass of the pair loop (all of a row's pairs when at most 12)
DW_ROWS_FULL = 12  # rows of up to this many pairs unrolled whole (VWW's 24-pixel rows: 2 KB a function more than
# a loop of 4 pairs, 0.5 estimated cycles an output less)


def _dw_first(stride2: bool, r: int) -> list:
    """The first three words a pixel pair (one pixel: stride 1's form) reads, r0 moved past them: row 0's
    u = [x0 x1], v = [x2 x3] and row 1's u (stride 1), row 0's three words (stride 2)."""
    t0, t1, t2 = _T
    p = DW_IN_REG
    if stride2:
        return [f"ldr {t0}, [{p}], #8", f"ldr {t1}, [{p}, #-4]", f"ldr {t2}, [{p}]"]
    return [f"ldr {t0}, [{p}], #4", f"ldr {t1}, [{p}]", f"ldr {t2}, [{p}, #{r - 4}]"]


def _dw_pair_macs(r: int, two: bool, stride2: bool) -> list:
    """After _dw_first's loads (in r2, r12, lr): the rest of the loads (grouped, each but a group's last
    pipelined) and the MACs of one output pixel (a0) or two (a0, a1), the start r3 their first MACs' addend.
    Stride 1, per row of taps: a0 += SMLAD u, w01 + SMLABT v, w12; a1 += SMLATB u, w01 + SMLAD v, w12.
    Stride 2 (pixel 1 two entries on), per row the words u, v, t: a0 += SMLAD u, w01 + SMLABT v, w12,
    a1 += SMLAD v, w01 + SMLABT t, w12."""
    t0, t1, t2 = _T
    w = _W
    p, a0, a1 = DW_IN_REG, DW_ACC0_REG, DW_ACC1_REG
    if two and stride2:
        out = [f"smlad {a1}, {t1}, {w[0]}, {_S}", f"smlad {a0}, {t0}, {w[0]}, {_S}",
               f"smlabt {a0}, {t1}, {w[1]}, {a0}", f"smlabt {a1}, {t2}, {w[1]}, {a1}"]
        for k in (1, 2):
            o = k * r - 8
            out += [f"ldr {t0}, [{p}, #{o}]", f"ldr {t1}, [{p}, #{o + 4}]", f"ldr {t2}, [{p}, #{o + 8}]",
                    f"smlad {a0}, {t0}, {w[2 * k]}, {a0}", f"smlabt {a0}, {t1}, {w[2 * k + 1]}, {a0}",
                    f"smlad {a1}, {t1}, {w[2 * k]}, {a1}", f"smlabt {a1}, {t2}, {w[2 * k + 1]}, {a1}"]
        return out
    out = ([f"smlatb {a1}, {t0}, {w[0]}, {_S}"] if two else []) + [f"smlad {a0}, {t0}, {w[0]}, {_S}",
                                                                    f"smlabt {a0}, {t1}, {w[1]}, {a0}"]
    out += [f"smlad {a1}, {t1}, {w[1]}, {a1}"] if two else []
    out += [f"smlad {a0}, {t2}, {w[2]}, {a0}"] + ([f"smlatb {a1}, {t2}, {w[2]}, {a1}"] if two else [])
    out += [f"ldr {t0}, [{p}, #{r}]", f"ldr {t1}, [{p}, #{2 * r - 4}]", f"ldr {t2}, [{p}, #{2 * r}]"]
    out += [f"smlabt {a0}, {t0}, {w[3]}, {a0}"] + ([f"smlad {a1}, {t0}, {w[3]}, {a1}"] if two else [])
    out += [f"smlad {a0}, {t1}, {w[4]}, {a0}"] + ([f"smlatb {a1}, {t1}, {w[4]}, {a1}"] if two else [])
    out += [f"smlabt {a0}, {t2}, {w[5]}, {a0}"] + ([f"smlad {a1}, {t2}, {w[5]}, {a1}"] if two else [])
    return out


def smmlar_keep_ra(a: str, mult: str, ra: str, tmp: str, sign: bool = True) -> list:
    """a = SMMLAR a, mult, ra + (a >> 31) with ra left in its register for the next output: SMMLAR into tmp, then
    a = tmp + (a >> 31) (a 2^32 step of the 64-bit sum: the same value); ``sign`` False (under a fused ReLU,
    exactness.sign_free) SMMLAR a, a, mult, ra alone."""
    if not sign:
        return [f"smmlar {a}, {a}, {mult}, {ra}"]
    return [f"smmlar {tmp}, {a}, {mult}, {ra}", f"add {a}, {tmp}, {a}, asr #31"]


def dw_requant_asm(c: int, two: bool, act_min: int, act_max: int, right: int, following: list | None,
                   sign: bool = True) -> list:
    """a0 (and a1) requantized and stored c bytes apart at r1, r1 on: ra and mult loaded once for both,
    SMMLAR t, a, mult, ra then a = t + (a >> 31) (the same as SMMLAR with ra + (a >> 31): a 2^32 step of the
    64-bit sum; ``sign`` False, under a fused ReLU: SMMLAR a, a, mult, ra), SSAT with the right shift as its
    immediate. ``following``: the next pixels' first three loads, placed among the stores (each load then
    pipelined with a load or a store)."""
    t0, t1, t2 = _T
    y = DW_OUT_REG
    store = (lambda a: [f"strb {a}, [{y}], #{c}"]) if c <= 255 else (lambda a: [f"strb {a}, [{y}]"] + adjust(y, c))
    accs = [DW_ACC0_REG, DW_ACC1_REG] if two else [DW_ACC0_REG]
    out = [f"ldr {t0}, {_RA}", f"ldr {t1}, {_MULT}"]
    for a in accs:
        out += smmlar_keep_ra(a, t1, t0, t2, sign)
    for a in accs:
        out += clamp_asm(a, act_min, act_max, right or None)
    nxt = list(following or [])
    if len(accs) == 2:
        return out + nxt[:2] + store(DW_ACC0_REG) + nxt[2:] + store(DW_ACC1_REG)
    return out + nxt + store(DW_ACC0_REG)


def _dw_chunk(r: int, c: int, pairs: int, odd: bool, act_min: int, act_max: int, right: int, stride2: bool,
              sign: bool = True) -> list:
    """`pairs` pixel pairs (and the odd last pixel) in a row: each pair's requantization holds the next
    one's first loads."""
    units = [True] * pairs + ([False] if odd else [])
    out = _dw_first(stride2 and units[0], r)
    for i, two in enumerate(units):
        nxt = _dw_first(stride2 and units[i + 1], r) if i + 1 < len(units) else None
        out += _dw_pair_macs(r, two, stride2) + dw_requant_asm(c, two, act_min, act_max, right, nxt, sign)
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
    p = DW_IN_REG
    return [f"ldr {_U0}, [{p}, #{xb}]", f"ldr {_U1}, [{p}, #{xb + r}]", f"ldr {_V1}, [{p}, #{xb + r + 4}]",
            f"ldr {_V0}, [{p}, #{xb + 4}]", f"ldr {_S2}, {start}"]


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
            f"ldr {u1}, [{DW_IN_REG}, #{xb + 2 * r}]", f"ldr {v1}, [{DW_IN_REG}, #{xb + 2 * r + 4}]",
            f"smlad {u0}, {u1}, {w[4]}, {u0}", f"smlatb {f}, {u1}, {w[4]}, {f}",
            f"smlad {s}, {u1}, {w[2]}, {s}", f"smlatb {v0}, {u1}, {w[2]}, {v0}",
            f"smlabt {u0}, {v1}, {w[5]}, {u0}", f"smlad {f}, {v1}, {w[5]}, {f}",
            f"smlabt {s}, {v1}, {w[3]}, {s}", f"smlad {v0}, {v1}, {w[3]}, {v0}",
            f"ldr {u1}, [{DW_IN_REG}, #{xb + 3 * r}]", f"ldr {v1}, [{DW_IN_REG}, #{xb + 3 * r + 4}]",
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
    t, ra_r, m_r, y = _U0, _U1, _V1, DW_OUT_REG
    out = [f"ldr {ra_r}, {ra}", f"ldr {m_r}, {mult}"] + smmlar_asm(t, m_r, ra_r, ra_r, sign)  # ra_r + sign
    out += clamp_asm(t, act_min, act_max, right or None)
    out += ([f"ldr {ra_r}, {ra}"] if sign else []) + [f"strb {t}, [{y}, #{yb}]"]  # ra again where the sign took it
    for a in (_F, _S2, _V0):
        out += smmlar_keep_ra(a, m_r, ra_r, t, sign)
    for a in (_F, _S2, _V0):
        out += clamp_asm(a, act_min, act_max, right or None)
    nxt = list(following)
    stores = [f"strb {_V0}, [{y}, #{yb + orow + c}]", f"strb {_S2}, [{y}, #{yb + orow}]",
              f"strb {_F}, [{y}, #{yb + c}]"]
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
           f"ldr {u1}, [{DW_IN_REG}, #{xb + 2 * r}]", f"ldr {v1}, [{DW_IN_REG}, #{xb + 2 * r + 4}]",
           f"ldr {v0}, [{DW_IN_REG}, #{xb + 3 * r}]", f"ldr {f}, [{DW_IN_REG}, #{xb + 3 * r + 4}]",
           f"smlad {u0}, {u1}, {w[4]}, {u0}", f"smlabt {u0}, {v1}, {w[5]}, {u0}",
           f"smlad {s}, {u1}, {w[2]}, {s}", f"smlabt {s}, {v1}, {w[3]}, {s}",
           f"smlad {s}, {v0}, {w[4]}, {s}", f"smlabt {s}, {f}, {w[5]}, {s}",
           f"ldr {u1}, {ra}", f"ldr {v1}, {mult}"]
    out += smmlar_keep_ra(u0, v1, u1, v0, sign) + smmlar_keep_ra(s, v1, u1, v0, sign)
    out += clamp_asm(u0, act_min, act_max, right or None) + clamp_asm(s, act_min, act_max, right or None)
    return out + [f"strb {u0}, [{DW_OUT_REG}, #{yb}]"] + list(end) + [f"strb {s}, [{DW_OUT_REG}, #{yb + orow}]"]


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
# from 8 to 5 once the stride-2 layers ran straight from the input (dsp_depthwise_direct_asm, less code than their
# planar rows): VWW's 12x12x64 (estimate 13.8 k for 1.7 KB) and 3x3x256 (6.1 k for 1.1 KB) layers in.)
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
        out += adjust(DW_IN_REG, 4 * DW_BLOCKS_UNROLL) + adjust(DW_OUT_REG, 2 * c * DW_BLOCKS_UNROLL)
        out += [f"subs {_U1}, #1", f"str {_U1}, [sp, #4]", f"bne .Lbk{tag}"]
    end = [f"ldr {_U1}, [sp]"]
    if rest or odd:
        out += _dw_blocks(l, r, rest, bool(odd), right, frame, end)
    else:
        out += end
    out += adjust(DW_IN_REG, 2 * r - 4 * DW_BLOCKS_UNROLL * loop)
    out += adjust(DW_OUT_REG, 2 * l.ow * c - 2 * c * DW_BLOCKS_UNROLL * loop)
    return out + [f"cmp {DW_OUT_REG}, {_U1}", f"bne .Lrq{tag}"]


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
        out += adjust(DW_IN_REG, step)
    end = f"ldr {_T[0]}, [sp]"  # [sp]: y past the last row; before the row's last store (pipelined) when it ends so
    last = max((i for i, ins in enumerate(out) if ins.startswith(("strb", "bne", ".L"))), default=-1)
    if out[last].startswith("strb"):
        out.insert(last, end)
    else:
        out.append(end)
    return out + [f"cmp {DW_OUT_REG}, {_T[0]}", f"bne .Lrow{tag}"]


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
