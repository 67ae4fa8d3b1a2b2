"""The DSP cores' generated kernels (Cortex-M33, M4): per layer the values of its template in
templates/generated/dsp_*.cpp.j2 (register-blocked SMLAD GEMMs, the smmlar GEMM in assembly, depthwise
3x3, the add by tables): constant tables, sizes, the assembly of the smmlar GEMM; and ``generate``,
which writes the whole generated_kernels.cpp of a program."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.exactness import add_dsp_plan, wrap32
from mcu_gen.backends.generated.hooks import prepare_hooks_source
from mcu_gen.backends.generated.layers import (ADD_OPS, CONV_SCRATCH_ARG, POINTWISE_OPS, AddLayer, DepthwiseLayer,
                                               GemmLayer, Generated)
from mcu_gen.backends.generated.match import eligible
from mcu_gen.backends.render import allowed, bound, describe, prefix, render, rows, set_places, table
from mcu_gen.paths import KERNELS_GENERATED
from mcu_gen.program.ir import Program


# -- C++ ------------------------------------------------------------------------------------------
# The static C++ every generated DSP file starts with: kernels_generated/dsp_prelude.h.
PRELUDE = (KERNELS_GENERATED / "dsp_prelude.h").read_text(encoding="utf-8")


# The input rows of a generated convolution (direct / in place): kernels_generated/dsp_rows.h.
ROWS_SOURCE = (KERNELS_GENERATED / "dsp_rows.h").read_text(encoding="utf-8")


# The elementwise add by tables: kernels_generated/dsp_add.h.
ADD_SOURCE = (KERNELS_GENERATED / "dsp_add.h").read_text(encoding="utf-8")


def ring_arg(l) -> int | None:
    """The scratch argument of a convolution layer planned in place row by row, else None."""
    return CONV_SCRATCH_ARG if getattr(l, "ring_rows", 0) else None


_IO_ARGS = {"pointwise": (0, 13), "conv": (0, 13), "linear": (0, 11)}


def _header(l) -> dict:
    """The values every layer template takes: name, instruction, operator, constants' prefix, MACs."""
    return {"name": l.name, "instruction": int(l.instruction), "op": l.op, "pre": prefix(l.name), "macs": f"{l.macs:,}"}


def _requant_tables(l, pre: str) -> dict:
    """mult, shift and round tables of the requant_fast (right shifts, stored positive) / requant_any path."""
    right = l.right_shift_only
    shifts = -l.shifts.astype(np.int64) if right else l.shifts
    rnd = (1 << (-l.shifts.astype(np.int64) - 1)) if right else np.zeros(len(l.shifts), np.int64)
    return {"mult": table("int32_t", f"{pre}Mult", l.mults, per_line=8),
            "shift": table("int32_t", f"{pre}Shift", shifts, per_line=16),
            "round": table("int32_t", f"{pre}Round", rnd, per_line=8)}


def scratch_arg(l) -> int | None:
    """The scratch argument a DSP GEMM layer reads: an in-place convolution's ring, and the per-call buffers
    that work_plan put in the scratch tensor (then checked at load: shape, dtype, planned place)."""
    work = getattr(l, "work", None)
    return CONV_SCRATCH_ARG if ring_arg(l) is not None or (work is not None and work.offset is not None) else None


def _gemm_values(l: GemmLayer) -> dict:
    """The values of a GEMM-like layer's template (dsp_gemm_layer / dsp_smmlar_layer)."""
    in_arg, out_arg = _IO_ARGS[l.kind]
    v = _header(l)
    scratch = scratch_arg(l)
    extra = l.scratch_checks if scratch is not None and ring_arg(l) is None else []
    v.update(what=describe(l), weight_bytes=f"{l.weight_bytes:,}", k=l.k, n=l.n, rows_count=l.rows,
             ring_arg=scratch, bound=bound(l, in_arg, out_arg, scratch),
             checks=l.checks + extra + [allowed(in_arg, out_arg, l.inplace_ok, l)],
             rows=rows(l) if l.kind == "conv" else None, geometry=list(l.geometry) if l.kind == "conv" else None,
             zero_point=getattr(l, "zero_point", None), out_offset=l.out_offset, act_min=l.act_min, act_max=l.act_max)
    return v


def _layer_source(l: GemmLayer) -> str:
    v = _gemm_values(l)
    pre = v["pre"]
    v.update(_requant_tables(l, pre),
             mode="kFast" if l.right_shift_only else "kAny",
             weights=table("uint32_t", f"{pre}Weights", l.packed_weights(), per_line=8, align=8, fmt="pair"),
             init=table("int32_t", f"{pre}Init", l.acc_init, per_line=8))
    return render("generated/dsp_gemm_layer.cpp.j2", **v)


def _dw_runs(l: DepthwiseLayer) -> list:
    """Per run of output rows of one border class (its taps ky0..ky1), per run of columns of one class:
    the taps kx0..kx1, the first input column, the output offset, the pixel count, the start's offset."""
    rc, cc, ru, cu = l.classes()
    out = []
    for oy0, oy1, r in DepthwiseLayer.runs(rc):
        cols = [{"kx0": cu[c][0], "kx1": cu[c][1], "x": ox0 * l.stride - l.pad_w, "y": ox0 * l.c, "count": ox1 - ox0,
                 "init": (r * len(cu) + c) * l.c} for ox0, ox1, c in DepthwiseLayer.runs(cc)]
        out.append({"oy0": oy0, "oy1": oy1, "ky0": ru[r][0], "ky1": ru[r][1], "cols": cols})
    return out


def _dw_layer_source(l: DepthwiseLayer) -> str:
    v = _header(l)
    pre = v["pre"]
    _, _, ru, cu = l.classes()  # the taps inside the input per row / column border class
    win = dw_window(l)
    consts = l.smmlar()
    scale = 2 if consts is not None else 1  # smmlar: doubled weights and starts (requant_smmlar)
    if consts is not None:
        v.update(mult=table("int32_t", f"{pre}Mult", consts, per_line=9), shift=None, round=None)
    else:
        v.update(_requant_tables(l, pre))
    v.update(c=l.c, h=l.h, w=l.w, oh=l.oh, ow=l.ow, stride=l.stride, pad_h=l.pad_h, pad_w=l.pad_w,
             weight_bytes=f"{l.weight_bytes:,}", doubled=scale == 2, row_taps=str(ru), col_taps=str(cu),
             weights=table("uint32_t", f"{pre}Weights", l.packed_weights().astype(np.int64) * scale, per_line=8,
                           align=8, fmt="pair"),
             init=table("int32_t", f"{pre}Init", wrap32(l.init_table().astype(np.int64) * scale), per_line=8),
             inplace=l.inplace_ok,
             xs=4 * win[2] if l.inplace_ok else l.c, groups=win[2] if l.inplace_ok else l.c // 4,
             mode={"smmlar": "kSmmlar", "fast": "kFast", "any": "kAny"}[l.requant_kind],
             out_offset=l.out_offset, act_min=l.act_min, act_max=l.act_max, row_runs=_dw_runs(l))
    win_rows, ring, _ = win
    plane = dw_plane(l)
    v["planar"] = plane is not None
    if plane is not None:  # one channel at a time on int16 rows (dsp_prelude.h: dw_planar)
        rows_, ring, row = plane
        w = l.weights.astype(np.int64).reshape(3, 3, l.c) * scale  # [ky][kx][c]
        lo = np.stack([w[:, 0], w[:, 1]], axis=1) & 0xFFFF  # [ky][(w01, w12)][c]
        hi = np.stack([w[:, 1], w[:, 2]], axis=1) & 0xFFFF
        block = np.zeros((l.c, 10), np.int64)
        block[:, :6] = (lo | (hi << 16)).transpose(2, 0, 1).reshape(l.c, 6)
        block[:, 6] = wrap32((l.bias.astype(np.int64) + l.in_offset * l.weights.astype(np.int64).sum(axis=0)) * scale)
        if consts is not None:
            block[:, 7:] = np.asarray(consts, np.int64).reshape(l.c, 3)[:, [1, 0, 2]]  # ra, mult, right
        asm = dw_rows_asm(l, row) if consts is not None else None
        v.update(plane_rows=rows_, plane_row=row, pad_value=-l.in_offset,
                 block=table("uint32_t", f"{pre}Block", block, per_line=10, align=8, fmt="hex"),
                 rows_asm=[i.replace("%=", f"_{l.name}") for i in asm] if asm else None,
                 extra_ring=["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"] if ring is not None else [])
        v.update(win_rows=0, ring_arg=ring, bound=bound(l, 0, 14, ring), linear_rows=False, row_runs=[],
                 checks=l.checks + v.pop("extra_ring") + [allowed(0, 14, l.inplace_ok, l)])
        return render("generated/dsp_depthwise_layer.cpp.j2", **v)
    # the input rows at a fixed distance (not in place, or a window that holds the whole input: DwWindow::kWhole):
    # one dw_pixels call per run of rows and columns of one border class
    v["linear_rows"] = not l.inplace_ok or win_rows >= l.h + l.pad_h
    extra = ["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"] if ring is not None else []
    v.update(win_rows=win_rows, ring_arg=ring, bound=bound(l, 0, 14, ring),
             checks=l.checks + extra + [allowed(0, 14, l.inplace_ok, l)])
    return render("generated/dsp_depthwise_layer.cpp.j2", **v)


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


# The planar rows in assembly: registers of the function below.
_P, _Y, _K, _W, _A0, _A1, _T = "r0", "r1", "r3", ["r4", "r5", "r6", "r7", "r8", "r9"], "r10", "r11", ["r2", "r12", "lr"]
DW_ROWS_UNROLL = 4  # pairs of output pixels per pass of the pair loop (all of a row's pairs when at most 2x this)


def _dw_pair2_macs(r: int) -> list:
    """Stride 2: the 12 MACs of two output pixels at r0 (pixel 0 reads entries 0..2, pixel 1 entries 2..4 of
    each buffer row): per row the words u, v, t at 0, 4, 8 bytes, a0 += SMLAD u, w01 + SMLABT v, w12 and
    a1 += SMLAD v, w01 + SMLABT t, w12; r0 += 8."""
    t0, t1, t2 = _T
    w = _W
    out = [f"ldr {_A0}, [{_K}, #24]", f"ldr {t0}, [{_P}], #8", f"ldr {t1}, [{_P}, #-4]", f"ldr {t2}, [{_P}]",
           f"smlad {_A1}, {t1}, {w[0]}, {_A0}", f"smlad {_A0}, {t0}, {w[0]}, {_A0}",
           f"smlabt {_A0}, {t1}, {w[1]}, {_A0}", f"smlabt {_A1}, {t2}, {w[1]}, {_A1}"]
    for k in (1, 2):
        o = k * r - 8
        out += [f"ldr {t0}, [{_P}, #{o}]", f"ldr {t1}, [{_P}, #{o + 4}]", f"ldr {t2}, [{_P}, #{o + 8}]",
                f"smlad {_A0}, {t0}, {w[2 * k]}, {_A0}", f"smlabt {_A0}, {t1}, {w[2 * k + 1]}, {_A0}",
                f"smlad {_A1}, {t1}, {w[2 * k]}, {_A1}", f"smlabt {_A1}, {t2}, {w[2 * k + 1]}, {_A1}"]
    return out


def _dw_pair_asm(r: int, c: int, two: bool, act_min: int, act_max: int, stride: int = 1) -> list:
    """Two output pixels (one when not ``two``) of a planar row at r0 (buffer rows ``r`` bytes apart), the
    words (w01, w12) of tap rows 0-2 in r4-r9, the block k (r3: start at 24, ra 28, mult 32, right 36):
    loads grouped (pipelined), 12 MACs, SMMLAR requantization; r0 += 4 (stride 2, two: 8), r1 += 2c (c)."""
    t0, t1, t2 = _T
    w = _W
    if two and stride == 2:
        return _dw_pair2_macs(r) + _dw_requant_asm(c, two, act_min, act_max)
    out = [f"ldr {_A0}, [{_K}, #24]", f"ldr {t0}, [{_P}], #4", f"ldr {t1}, [{_P}]", f"ldr {t2}, [{_P}, #{r - 4}]"]
    if two:
        out.append(f"smlatb {_A1}, {t0}, {w[0]}, {_A0}")
    out += [f"smlad {_A0}, {t0}, {w[0]}, {_A0}", f"smlabt {_A0}, {t1}, {w[1]}, {_A0}"]
    if two:
        out.append(f"smlad {_A1}, {t1}, {w[1]}, {_A1}")
    out += [f"ldr {t0}, [{_P}, #{r}]", f"ldr {t1}, [{_P}, #{2 * r - 4}]", f"smlad {_A0}, {t2}, {w[2]}, {_A0}"]
    if two:
        out.append(f"smlatb {_A1}, {t2}, {w[2]}, {_A1}")
    out.append(f"smlabt {_A0}, {t0}, {w[3]}, {_A0}")
    if two:
        out.append(f"smlad {_A1}, {t0}, {w[3]}, {_A1}")
    out += [f"ldr {t2}, [{_P}, #{2 * r}]", f"smlad {_A0}, {t1}, {w[4]}, {_A0}"]
    if two:
        out.append(f"smlatb {_A1}, {t1}, {w[4]}, {_A1}")
    out.append(f"smlabt {_A0}, {t2}, {w[5]}, {_A0}")
    if two:
        out.append(f"smlad {_A1}, {t2}, {w[5]}, {_A1}")
    return out + _dw_requant_asm(c, two, act_min, act_max)


def _dw_requant_asm(c: int, two: bool, act_min: int, act_max: int) -> list:
    """a0 (and a1) requantized (SMMLAR with the block's ra, mult, right) and stored c bytes apart at r1, r1 on."""
    t0, t1, t2 = _T
    out = []
    store = (lambda a: [f"strb {a}, [{_Y}], #{c}"]) if c <= 255 else (lambda a: [f"strb {a}, [{_Y}]"] + _adjust(_Y, c))
    out += [f"ldr {t0}, [{_K}, #28]", f"ldr {t1}, [{_K}, #32]", f"ldr {t2}, [{_K}, #36]",
            f"add {t0}, {t0}, {_A0}, asr #31", f"smmlar {_A0}, {_A0}, {t1}, {t0}", f"asr {_A0}, {_A0}, {t2}"]
    out += _clamp_asm(_A0, act_min, act_max)
    if two:
        out.append(f"ldr {t0}, [{_K}, #28]")  # pipelines with the store
    out += store(_A0)
    if two:
        out += [f"add {t0}, {t0}, {_A1}, asr #31", f"smmlar {_A1}, {_A1}, {t1}, {t0}", f"asr {_A1}, {_A1}, {t2}"]
        out += _clamp_asm(_A1, act_min, act_max) + store(_A1)
    return out


def dw_rows_asm(l: DepthwiseLayer, row: int) -> list:
    """The body of the layer's planar rows function (DSP cores, smmlar requantization):
        void rows(const int16_t* p, int8_t* y, int32_t rows, const int32_t* k)
    `rows` output rows of one channel, the first from the buffer rows at p (row bytes 2 row apart), the
    next stride buffer rows on; outputs c bytes apart from y, rows ow c apart; k: the channel's block
    (dsp_prelude.h: dw_planar). The pixel pairs of a row are unrolled (DW_ROWS_UNROLL pairs a pass of a
    loop beyond 2 DW_ROWS_UNROLL), an odd last pixel alone; y's end at [sp], the pass count at [sp, #4]."""
    if l.ow * l.c > 65535:
        raise ValueError(f"{l.name}: output rows of {l.ow * l.c} bytes (MOVW)")
    r, c, pairs, odd, st = 2 * row, l.c, l.ow // 2, l.ow % 2, l.stride
    if 2 * r > 4095:
        raise ValueError(f"{l.name}: planar rows of {row} entries: load offsets past 4095")
    pair = _dw_pair_asm(r, c, True, l.act_min, l.act_max, st)
    out = ["push {r2, r4, r5, r6, r7, r8, r9, r10, r11, lr}", "sub sp, #8", f"movw r12, #{l.ow * c}",
           "mla r2, r2, r12, r1", "str r2, [sp]", "ldm r3, {r4, r5, r6, r7, r8, r9}", ".Lrow%=:"]
    loop, rest = (pairs // DW_ROWS_UNROLL, pairs % DW_ROWS_UNROLL) if pairs > 2 * DW_ROWS_UNROLL else (0, pairs)
    if loop:
        out += [f"movs {_T[0]}, #{loop}", f"str {_T[0]}, [sp, #4]", ".Lpair%=:"]
        for _ in range(DW_ROWS_UNROLL):
            out += pair
        out += [f"ldr {_T[0]}, [sp, #4]", f"subs {_T[0]}, #1", f"str {_T[0]}, [sp, #4]", "bne .Lpair%="]
    for _ in range(rest):
        out += pair
    if odd:
        out += _dw_pair_asm(r, c, False, l.act_min, l.act_max)
    step = st * r - 4 * st * pairs - 4 * odd  # to the next output row's first buffer row
    if step:
        out += _adjust(_P, step)
    out += [f"ldr {_T[0]}, [sp]", f"cmp {_Y}, {_T[0]}", "bne .Lrow%="]  # [sp]: y past the last row
    out += ["add sp, #12", "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}"]
    return out


# -- the smmlar GEMM in assembly (Cortex-M33/M4 with the DSP extension) ---------------------------
ACC8 = ["r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"]  # LDM-loadable: ascending


def _clamp_asm(reg: str, act_min: int, act_max: int, right: int | None = None) -> list:
    """Saturation to int8 (after an arithmetic right shift by the immediate ``right``, when given), then
    the activation range."""
    out = [f"ssat {reg}, #8, {reg}" + (f", asr #{right}" if right is not None else "")]
    if act_min > -128:
        out += [f"cmp {reg}, #{act_min}", "it lt", f"movlt {reg}, #{act_min}"]
    if act_max < 127:
        out += [f"cmp {reg}, #{act_max}", "it gt", f"movgt {reg}, #{act_max}"]
    return out


def _block_asm(b: int, k: int, act_min: int, act_max: int) -> list:
    """One block of b (8 or 4) output channels of one row; r0 = x row (reloaded), r1 = stream."""
    acc = ACC8[:b]
    out = ["ldr r0, [sp]", f"ldmia r1!, {{{acc[0]}-{acc[-1]}}}"]
    for _ in range(k // 4):
        out += ["ldr lr, [r0], #4", "sxtb16 r12, lr", "sxtb16 lr, lr, ror #8", f"ldrd r2, r3, [r1], #{8 * b}"]
        for c, a in enumerate(acc):
            if c:
                out.append(f"ldrd r2, r3, [r1, #{-8 * (b - c)}]")
            out += [f"smlad {a}, r12, r2, {a}", f"smlad {a}, lr, r3, {a}"]
    out.append("ldr r2, [sp, #4]")
    for a in acc:  # (mult, ra, right) -> r0, r3, r12
        out += ["ldmia r1!, {r0, r3, r12}", f"add r3, r3, {a}, asr #31", f"smmlar {a}, {a}, r0, r3",
                f"asr {a}, {a}, r12"] + _clamp_asm(a, act_min, act_max) + [f"strb {a}, [r2], #1"]
    out.append("str r2, [sp, #4]")
    return out


def _adjust(reg: str, delta: int) -> list:
    """reg += delta in ADDW/SUBW steps of at most 4095."""
    out = []
    while delta:
        step = max(-4095, min(4095, delta))
        out.append(f"{'addw' if step > 0 else 'subw'} {reg}, {reg}, #{abs(step)}")
        delta -= step
    return out


class _Stream:
    """Addresses in the weight stream for the two-row block: r1 moves inside the block (ADDW/SUBW) only
    when an offset leaves LDR's immediate range; `pos` is r1's offset from the block's start."""

    def __init__(self, out: list):
        self.out, self.pos = out, 0

    def at(self, off: int) -> str:
        d = off - self.pos
        if d < -255 or d > 4095:
            self.out += _adjust("r1", d)
            self.pos, d = off, 0
        return f"[r1, #{d}]"

    def ld(self, reg: str, off: int):
        """LDR reg from the block's byte offset off (after r1 moved, if it must)."""
        addr = self.at(off)
        self.out.append(f"ldr {reg}, {addr}")

    def to(self, off: int):
        self.out += _adjust("r1", off - self.pos)
        self.pos = off


def pair_ok(k: int, n: int) -> bool:
    """The two-row block addresses both rows' inputs and outputs with 12-bit immediates."""
    return 2 * k <= 4092 and n + 8 <= 4095


PAIR_LOOP_K = 160  # from this K the sub-blocks of 4 channels are one loop (flash), below unrolled (cycles)


def _mac_pair(out: list, started: set, i: int, x0: str, x1: str, w: str) -> None:
    """SMLAD of weight word w into channel i's two accumulators (row 0 r{4+i} with x0, row 1 r{8+i} with
    x1). Only row 0's accumulator is loaded with the channel's start: the first pair of a channel
    starts row 1 from it (SMLAD's accumulate operand), so no MOV copies the starts."""
    a0, a1 = f"r{4 + i}", f"r{8 + i}"
    if i in started:
        out += [f"smlad {a0}, {x0}, {w}, {a0}", f"smlad {a1}, {x1}, {w}, {a1}"]
    else:
        started.add(i)
        out += [f"smlad {a1}, {x1}, {w}, {a0}", f"smlad {a0}, {x0}, {w}, {a0}"]


def _pair_macs(out: list, st, b: int, k: int, chans) -> None:
    """The MACs of one sub-block of 4 channels over both rows: ``chans`` pairs (i, c), accumulators
    r{4+i} (row 0, holding the start) and r{8+i} (row 1), channel c's weights at stream offset
    w0 + 8bg + 8c (pair A), + 4 (pair B). Per 4 inputs the two rows' words (r0, r3) are widened once
    into A halves (r0, r3) and B halves (r2, lr); the B pairs first, the weight word in r12 (the first
    one loaded with the previous group's tail), then the A pairs, whose three free registers (r2, r12,
    lr) take three weight words in a row, then the last A pair beside the next group's x base, its first
    B word and its two input words: per 4 inputs 11 loads (17 estimated M33 cycles), 4 SXTB16, 16 SMLAD
    (37 cycles for 32 MACs)."""
    groups = k // 4
    w0 = 4 * b  # the first weight word
    started: set = set()

    def wa(g: int, c: int) -> int:
        return w0 + 8 * b * g + 8 * c

    (i0, c0), (i1, c1), (i2, c2), (i3, c3) = chans
    out += ["ldr lr, [sp]", "ldr r0, [lr]", f"ldr r3, [lr, #{k}]"]
    st.ld("r12", wa(0, c0) + 4)
    for g in range(groups):
        out += ["sxtb16 r2, r0, ror #8", "sxtb16 lr, r3, ror #8", "sxtb16 r0, r0", "sxtb16 r3, r3"]
        for j, (i, c) in enumerate(chans):  # the B pairs: x in r2 / lr, the weight word in r12
            if j:
                st.ld("r12", wa(g, c) + 4)
            _mac_pair(out, started, i, "r2", "lr", "r12")
        st.ld("r2", wa(g, c0))  # the A pairs: x in r0 / r3
        st.ld("r12", wa(g, c1))
        st.ld("lr", wa(g, c2))
        _mac_pair(out, started, i0, "r0", "r3", "r2")
        _mac_pair(out, started, i1, "r0", "r3", "r12")
        _mac_pair(out, started, i2, "r0", "r3", "lr")
        st.ld("r2", wa(g, c3))
        if g + 1 < groups:  # the next group's x base, first B word, then (after the last A pair) its words
            out.append("ldr lr, [sp]")
            st.ld("r12", wa(g + 1, c0) + 4)
            _mac_pair(out, started, i3, "r0", "r3", "r2")
            out += [f"ldr r0, [lr, #{4 * (g + 1)}]", f"ldr r3, [lr, #{k + 4 * (g + 1)}]"]
        else:
            _mac_pair(out, started, i3, "r0", "r3", "r2")


WIDE_PTR = 28  # frame offset of the pointer to the widened input rows (the function's fifth argument)
WIDE_MAX_BYTES = 4092  # the widened rows (4K bytes) in reach of LDR's 12-bit offsets from their base (K <= 1023)
WIDE_STACK_BYTES = 576  # a wide GEMM's caller's row buffer plus its widened rows on the stack, at most (see wide_ok)


def wide_ok(k: int, n: int, caller_bytes: int = 0, on_stack: bool = True, stack_room: int = 0) -> bool:
    """Whether the two-row GEMM widens its two input rows once (``_pair_macs_wide``) into the 4K-byte buffer its
    caller passes: from two sub-blocks of 4 channels (the widening, 11 estimated M33 cycles per 4 inputs, costs
    more than the 8 it saves per sub-block below) and K <= WIDE_MAX_BYTES / 4. A buffer in the layer's scratch
    tensor (``on_stack`` False: planned in the arena, counted by the planner) has no other limit. On the stack
    the layer's buffers there (``caller_bytes``: gathered windows, in-place output rows, none) plus the 4K bytes
    stay within WIDE_STACK_BYTES, so that the generated layer stays inside the stack the library kernels of the
    image already need (issue 25: the default build's RAM no more than the library build's), or within
    ``stack_room`` where a library kernel of the image takes that much stack anyway (GemmLayer.stack_room: the
    quantized add's table, ResNet-8's in-place 3x3 convolution of K 144: 288 + 576 B)."""
    fits = caller_bytes + 4 * k <= max(WIDE_STACK_BYTES, stack_room) if on_stack else True
    return n >= 8 and 4 * k <= WIDE_MAX_BYTES and fits


def _widen_rows(k: int, wide: str = "arg") -> list:
    """Both rows' words, x and x + k, widened once per row pair: ``wide`` "arg" into the caller's buffer (the
    pointer at [sp + WIDE_PTR]), "frame" into the function's frame from [sp + WIDE_PTR]; per 4 inputs at 16g the
    halfword pairs x0 (bytes 0, 2), x1 (0, 2), x0 (1, 3), x1 (1, 3) (SXTB16, SXTB16 ROR 8).
    r1 and r4-r11 are free here (no accumulator lives across row pairs; r1 is reloaded after)."""
    groups = k // 4

    def group(src: str, so: int, dst: str, do: int) -> list:
        return [f"ldr r0, [{src}, #{so}]", f"ldr r12, [{src}, #{so + k}]", "sxtb16 r2, r0, ror #8", "sxtb16 r0, r0",
                "sxtb16 lr, r12, ror #8", "sxtb16 r12, r12", f"str r0, [{dst}, #{do}]", f"str r12, [{dst}, #{do + 4}]",
                f"str r2, [{dst}, #{do + 8}]", f"str lr, [{dst}, #{do + 12}]"]

    out = ["ldr r3, [sp]", f"ldr r1, [sp, #{WIDE_PTR}]" if wide == "arg" else f"add r1, sp, #{WIDE_PTR}"]
    if groups <= 16:
        for g in range(groups):
            out += group("r3", 4 * g, "r1", 16 * g)
        return out
    u = 4 if groups % 4 == 0 else (2 if groups % 2 == 0 else 1)
    out += [f"addw r4, r1, #{16 * groups}", ".Lwide_%=:"]
    for j in range(u):
        out += group("r3", 4 * j, "r1", 16 * j)
    out += [f"adds r3, #{4 * u}", f"adds r1, #{16 * u}", "cmp r1, r4", "bne .Lwide_%="]
    return out


def _pair_macs_wide(out: list, st, b: int, k: int, chans, wide: str = "arg") -> None:
    """The MACs of one sub-block of 4 channels over both rows, inputs widened (``_widen_rows``). Row 1's
    accumulators start from row 0's (the starts) in their first SMLAD: no MOV. "frame" (widened in the frame,
    r12 free): per 4 inputs and half (pairs A, then B) the 4 channels' weight words in r0, r2, r3, r12 (four
    LDR in a row, pipelined with the row-0 input load: 1 + 1 + 1 + 1 + 2 estimated M33 cycles), 4 SMLAD of
    row 0, the row-1 input (2), 4 SMLAD of row 1. "arg" (the caller's buffer, r12 its base, reloaded per
    sub-block: the requantization takes r12): per 4 inputs and half both rows' input words (r0 row 0, r2 row
    1) and two channels' weight words (r3, lr) in four LDR in a row (1 + 1 + 1 + 2), 4 SMLAD, the other two
    channels' weights (1 + 2), 4 SMLAD. Both 32 cycles per 32 MACs (40 with the inputs widened in the loop)."""
    wregs = ("r0", "r2", "r3", "r12")
    w0 = 4 * b  # the first weight word
    base, at = ("r12", 0) if wide == "arg" else ("sp", WIDE_PTR)
    if wide == "arg":
        out.append(f"ldr r12, [sp, #{WIDE_PTR}]")
    for g in range(k // 4):
        for half in (0, 4):
            xo = at + 16 * g + 2 * half
            first = g == 0 and half == 0  # row 1 first: it starts from row 0's accumulator (the start, no MOV)
            if wide == "frame":  # four weight registers (r12 is free): pipelined with the row-0 input load
                for i, c in chans:
                    st.ld(wregs[i], w0 + 8 * b * g + 8 * c + half)
                rows = ((xo + 4, 8), (xo, 4)) if first else ((xo, 4), (xo + 4, 8))
                for x_off, acc in rows:
                    out.append(f"ldr lr, [sp, #{x_off}]")
                    src = 4 if first else acc
                    out += [f"smlad r{acc + i}, lr, {wregs[i]}, r{src + i}" for i, _ in chans]
                continue
            out += [f"ldr r0, [{base}, #{xo}]", f"ldr r2, [{base}, #{xo + 4}]"]
            for pair in (chans[:2], chans[2:]):
                for reg, (i, c) in zip(("r3", "lr"), pair):
                    st.ld(reg, w0 + 8 * b * g + 8 * c + half)
                for reg, (i, c) in zip(("r3", "lr"), pair):
                    if first:
                        out += [f"smlad r{8 + i}, r2, {reg}, r{4 + i}", f"smlad r{4 + i}, r0, {reg}, r{4 + i}"]
                    else:
                        out += [f"smlad r{4 + i}, r0, {reg}, r{4 + i}", f"smlad r{8 + i}, r2, {reg}, r{8 + i}"]


def _pair_requant(out: list, st, c0: int, n: int, chans, act_min: int, act_max: int, rights=None) -> None:
    """Requantizes and stores one sub-block's two rows: channel c's (mult, ra, right) at stream offset
    c0 + 12c, its bytes at [r2 + c] (row 0) and [r2 + n + c] (row 1). A channel's stores follow the
    next channel's loads (the last load pipelines with them: 1 estimated cycle, not 2). With ``rights``
    (channel c's right shift: the function is the layer's own) the shift is SSAT's immediate: no load
    of right, no ASR."""
    stores: list = []
    for i, c in chans:
        for j, r in enumerate(("r0", "r3") if rights is not None else ("r0", "r3", "r12")):
            st.ld(r, c0 + 12 * c + 4 * j)
        out += stores
        for a in (f"r{4 + i}", f"r{8 + i}"):
            out += [f"add lr, r3, {a}, asr #31", f"smmlar {a}, {a}, r0, lr"]
            if rights is None:
                out += [f"asr {a}, {a}, r12"] + _clamp_asm(a, act_min, act_max)
            else:
                out += _clamp_asm(a, act_min, act_max, int(rights[c]))
        stores = [f"strb r{4 + i}, [r2, #{c}]", f"strb r{8 + i}, [r2, #{n + c}]"]
    out += stores


def _pair_block_unrolled(b: int, k: int, n: int, act_min: int, act_max: int, wide: bool = False,
                         rights=None) -> list:
    """One block of b (8 or 4) output channels of two rows, x and x + k, in sub-blocks of 4 channels:
    r4-r7 row 0's accumulators, r8-r11 row 1's; per 4 inputs both rows' words are loaded once
    ([sp] holds x: reloaded into r0) and widened (r0/r2 row 0, r3/r12 row 1), and each weight pair
    word (lr, one LDR) feeds two SMLADs, one per row: per 4 inputs and 4 channels 8 + 2 LDR (+1 for x),
    4 SXTB16, 16 SMLAD (32 MACs), against 8 LDRD for 32 MACs of one row. The stream's layout is the
    one-row block's; r1 moves through the block with the real offsets and ends at the next block."""
    out: list = []
    st = _Stream(out)
    c0 = 4 * b + 2 * b * k  # (mult, ra, right) of channel c at c0 + 12c
    for s in range(b // 4):
        chans = list(enumerate(range(4 * s, 4 * s + 4)))
        for i, c in chans:
            st.ld(f"r{4 + i}", 4 * c)  # row 1's accumulators start from these in the first MACs
        _pair_macs_wide(out, st, b, k, chans, wide) if wide else _pair_macs(out, st, b, k, chans)
        out.append("ldr r2, [sp, #4]")
        _pair_requant(out, st, c0, n, chans, act_min, act_max, rights)
    st.to(c0 + 12 * b)
    out += [f"adds r2, #{b}", "str r2, [sp, #4]"]
    return out


def _pair_block_asm(b: int, k: int, n: int, act_min: int, act_max: int, wide: bool = False, rights=None) -> list:
    """One block of b (8 or 4) output channels of two rows (``_pair_block_unrolled``). For K <
    PAIR_LOOP_K (or a block of 4) the sub-blocks of 4 channels are unrolled; from it they are one loop
    ([sp+20] = 16s: about 20 more cycles per sub-block, for half the code of a block of 8). The stream's
    layout is the one-row block's: sub-block s's accumulator starts are 16s bytes after sub-block 0's,
    its weights 32s, its constants 48s, so r1 steps by 16s between the three. [sp+24] holds the
    block's start. r1 ends at the next block."""
    if k < PAIR_LOOP_K or b <= 4 or rights is not None:
        return _pair_block_unrolled(b, k, n, act_min, act_max, wide, rights)
    chans = [(c, c) for c in range(4)]
    c0 = 4 * b + 2 * b * k  # (mult, ra, right) of channel c at c0 + 12c
    out: list = ["str r1, [sp, #24]", "movs r3, #0", "str r3, [sp, #20]", f".Lsub{b}_%=:",
                 "ldr r1, [sp, #24]", "ldr r3, [sp, #20]", "add r1, r3"]
    st = _Stream(out)  # offsets of sub-block 0; r1 = its base + 16s, 32s, 48s in the three parts
    for c in range(4):
        st.ld(f"r{4 + c}", 4 * c)  # row 1's accumulators start from these in the first MACs
    out += ["ldr lr, [sp, #20]", "add r1, lr"]
    _pair_macs_wide(out, st, b, k, chans, wide) if wide else _pair_macs(out, st, b, k, chans)
    out += ["ldr lr, [sp, #20]", "add r1, lr", "ldr r2, [sp, #4]", "add r2, r2, lr, lsr #2"]
    _pair_requant(out, st, c0, n, chans, act_min, act_max)
    out += ["ldr r3, [sp, #20]", "adds r3, #16", "str r3, [sp, #20]", f"cmp r3, #{4 * b}", f"blt .Lsub{b}_%="]
    out += ["ldr r1, [sp, #24]"] + _adjust("r1", c0 + 12 * b)
    out += ["ldr r2, [sp, #4]", f"adds r2, #{b}", "str r2, [sp, #4]"]
    return out


def gemm_asm_body(name: str, k: int, n: int, tail: bool, act_min: int, act_max: int, pairs: bool = True,
                  wide: str | None = None, rights=None) -> list:
    """The instructions (and labels) of void name(const int8_t* x, const GemmDesc* d, int8_t* y, int32_t rows,
    int16_t* wide):
    the smmlar GEMM of gemm_stream_c<k, tail, act_min, act_max> for rows >= 0, K fully unrolled. Rows
    in pairs (``_pair_block_asm``, when ``pair_ok``), then a last single row: registers r4-r11 the 8
    accumulators, r0 x, r1 the stream, r12/lr the activation pairs, r2/r3 a weight pair (during the
    requantization r0/r3/r12 the channel's constants and r2 y). Frame: [sp] x row, [sp+4] y,
    [sp+8] rows left, [sp+12] d->stream, [sp+16] d->end8. ``wide``: where the two rows of a pair are widened
    once (``_widen_rows``, ``_pair_macs_wide``): "arg" into the caller's buffer of 4K bytes (the fifth argument,
    kept at [sp+WIDE_PTR]: a scratch tensor in the arena), "frame" into the frame from [sp+WIDE_PTR]
    (``wide_ok``'s stack limit), None not at all. ``rights`` (the N right shifts of the layer whose own function
    this is, or None): the two-row blocks unrolled, each channel's shift an immediate of SSAT
    (``_pair_requant``); the single row reads them from the stream as before."""
    wide = wide if pairs and pair_ok(k, n) else None
    frame = WIDE_PTR + {"arg": 8, "frame": 4 * k}.get(wide, 0)  # 36 B pushed + the frame: 8-byte aligned
    body = ["push {r4-r11, lr}", f"sub sp, #{frame}", "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]",
            "ldr r12, [r1]", "ldr r1, [r1, #4]", "str r12, [sp, #12]", "str r1, [sp, #16]"]
    if wide == "arg":  # the fifth argument, on the caller's stack
        body += [f"ldr r12, [sp, #{frame + 36}]", f"str r12, [sp, #{WIDE_PTR}]"]
    if pairs and pair_ok(k, n):  # N is the function's: its blocks of 8 are a loop only from two
        body += ["cmp r3, #2", "blt .Lsingle_%=", ".Lpair_%=:"]
        if wide:
            body += _widen_rows(k, wide)
        body.append("ldr r1, [sp, #12]")
        if rights is not None:
            for c in range(0, n - 7, 8):
                body += _pair_block_asm(8, k, n, act_min, act_max, wide, rights[c:c + 8])
        elif n >= 8:
            body += [".Lpblock_%=:"] + _pair_block_asm(8, k, n, act_min, act_max, wide)
            if n >= 16:
                body += ["ldr r3, [sp, #16]", "cmp r1, r3", "bne .Lpblock_%="]
        if tail:
            body += _pair_block_asm(4, k, n, act_min, act_max, wide, None if rights is None else rights[n - 4:])
        body += ["ldm sp, {r0, r2, r3}", f"addw r0, r0, #{2 * k}", f"addw r2, r2, #{n}", "subs r3, #2",
                 "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]", "cmp r3, #2", "bge .Lpair_%=",
                 ".Lsingle_%=:"]
    body += ["ldr r3, [sp, #8]", "cmp r3, #0", "beq .Ldone_%=",
             ".Lrow_%=:", "ldr r1, [sp, #12]", "ldr r3, [sp, #16]", "cmp r1, r3", "beq .Ltail_%=",
             ".Lblock_%=:"]
    body += _block_asm(8, k, act_min, act_max)
    body += ["ldr r3, [sp, #16]", "cmp r1, r3", "bne .Lblock_%=", ".Ltail_%=:"]
    if tail:
        body += _block_asm(4, k, act_min, act_max)
    body += ["ldr r0, [sp]", f"movw r3, #{k}", "add r0, r3", "str r0, [sp]", "ldr r3, [sp, #8]", "subs r3, #1",
             "str r3, [sp, #8]", "bne .Lrow_%=", ".Ldone_%=:", f"add sp, #{frame}", "pop {r4-r11, pc}"]
    return [l.replace("%=", name) for l in body]


def _gemm_fn_source(name: str, k: int, n: int, tail: bool, act_min: int, act_max: int, pairs: bool,
                    rights, wide: str | None) -> str:
    return render("generated/dsp_gemm_fn.cpp.j2", name=name, k=k, tail=tail, act_min=act_min, act_max=act_max, wide=wide,
                  body=gemm_asm_body(name, k, n, tail, act_min, act_max, pairs, wide, rights))


OWN_FN_MAX_N = 32  # a layer with K < OWN_FN_MAX_K and N up to this has its own two-row function (``_own_rights``)
OWN_FN_MAX_K = 36  # K <= 32 and the 27-tap stems (28): where the requantization is a large share. Above, the
# unrolled blocks cost more flash than their 1.5 cycles per output save (MNIST's K 72, N 16 layer: 11,044 B
# as its own function against 6,796 B shared, for about 3,000 estimated cycles of 390,000)


def _own_rights(l):
    """The right shifts of a layer whose two-row GEMM is its own function (blocks unrolled, each shift an
    SSAT immediate: 1.5 estimated M33 cycles less per output, about 2 KB more flash per block of 8 of K 32):
    small K and N (VWW's K 8..32 1x1 layers, the 27-tap stems), where the requantization is a large share;
    else None (the function is shared by the layers of one K, N, tail and output range)."""
    if not (_calls_pairs(l) and pair_ok(l.k, l.n)) or l.k >= OWN_FN_MAX_K or l.n > OWN_FN_MAX_N:
        return None
    return tuple(int(r) for r in l.smmlar()[:, 2])


CONV_CHUNK_BYTES = 256  # gathered windows per GEMM call of a generated convolution (stack bytes)
INPLACE_CHUNK_BYTES = 256  # output rows of an in-place 1x1 convolution per GEMM call (stack bytes; at least 2 rows)
CONV_PAIR_BYTES = 1152  # two windows (the two-row GEMM) up to this many stack bytes (ResNet-8's K 576)


class Work:
    """A smmlar layer's per-call buffers (issue 25: planned in the arena where the plan gave them room):
    ``chunk`` gathered windows (conv) or output rows (in-place 1x1) of ``unit`` bytes, then, where ``wide``,
    the GEMM's pair of rows widened once (4K bytes). ``offset``: where they start in the layer's scratch
    tensor (argument 12, after an in-place convolution's ring of rows), None: on the compute function's stack."""

    def __init__(self, chunk: int, unit: int, k: int, wide: str | None, offset: int | None):
        self.chunk, self.unit, self.wide, self.offset = chunk, unit, wide, offset  # wide: gemm_asm_body's
        self.wide_at = chunk * unit
        self.bytes = self.wide_at + (4 * k if wide == "arg" else 0)


def _conv_chunk(l, floor: int, up: bool) -> int:
    """The windows per GEMM call of a convolution: as many as CONV_CHUNK_BYTES hold, at least ``floor``; an even
    count where the two-row GEMM runs (``floor`` 2), so that no window of a chunk goes down the single-row path
    (1.35 estimated M33 cycles per MAC against 1.0-1.16): one window more (``up``: a buffer in the arena's scratch)
    or one less (on the stack, within CONV_CHUNK_BYTES). ResNet-8's / VWW's 27-tap stems: 9 -> 10 / 8."""
    oh, ow = l.geometry[9], l.geometry[10]
    c = max(floor, min(oh * ow, CONV_CHUNK_BYTES // l.k))
    if floor == 2 and c % 2 and c < oh * ow:
        c += 1 if up else -1
    return c


def _call(l) -> str:
    """How the layer calls its GEMM: "conv" (gathered windows), "inplace" (1x1 over its own input), "direct"."""
    if l.kind == "conv":
        return "conv"
    return "inplace" if l.kind == "pointwise" and l.op != POINTWISE_OPS[0] else "direct"


def work_levels(l) -> list:
    """The (chunk, wide) choices of a smmlar layer whose buffers go in its scratch tensor, best first (estimated
    cycles: the widened rows save 8 of 40 cycles per 32 MACs, larger chunks a GEMM call per chunk): as many
    windows / rows as CONV_CHUNK_BYTES / INPLACE_CHUNK_BYTES hold (at least the two rows of the two-row GEMM),
    then two, each with the widened rows before without."""
    call = _call(l)
    if call == "conv":
        oh, ow = l.geometry[9], l.geometry[10]
        floor = 2 if oh * ow >= 2 and pair_ok(l.k, l.n) else 1
        chunks = [_conv_chunk(l, floor, True), floor]
    elif call == "inplace":
        chunks = [max(2, min(l.rows, INPLACE_CHUNK_BYTES // l.n // 2 * 2)), 2]
    else:
        chunks = [0]
    out = []
    for wide in (True, False):
        for c in chunks:
            pairs = (c >= 2 if call == "conv" else l.rows >= 2) and pair_ok(l.k, l.n)
            w = wide and pairs and wide_ok(l.k, l.n, on_stack=False)
            if (c, w) not in out and (c or w):
                out.append((c, w))
    return out


def work_bytes(l, chunk: int, wide: bool) -> int:
    return chunk * (l.k if _call(l) == "conv" else l.n) + (4 * l.k if wide else 0)


def stack_work(l) -> Work:
    """The layer's buffers on its compute function's stack (as before issue 25's arena buffers):
    CONV_CHUNK_BYTES of windows (two where they fit CONV_PAIR_BYTES), INPLACE_CHUNK_BYTES of rows, the widened
    rows where the stack buffers and they stay within WIDE_STACK_BYTES (``wide_ok``)."""
    call = _call(l)
    unit = l.k if call == "conv" else (l.n if call == "inplace" else 0)
    if call == "conv":
        oh, ow = l.geometry[9], l.geometry[10]
        floor = 2 if oh * ow >= 2 and pair_ok(l.k, l.n) and 2 * l.k <= CONV_PAIR_BYTES else 1
        chunk = _conv_chunk(l, floor, False)
    elif call == "inplace":
        chunk = max(2, min(l.rows, INPLACE_CHUNK_BYTES // l.n // 2 * 2))
    else:
        chunk = 0
    pairs = (chunk >= 2 if call == "conv" else l.rows >= 2) and pair_ok(l.k, l.n)
    return Work(chunk, unit, l.k, "frame" if pairs and wide_ok(l.k, l.n, chunk * unit, stack_room=l.stack_room) else None,
                None)


def scratch_levels(l) -> list:
    """work_levels that do at least as well as the stack (stack_work: the widened rows first, then the larger
    chunk): the choices worth a scratch tensor's bytes (on a tie the arena's gap, not the stack's deepest path)."""
    s = stack_work(l)
    return [(c, w) for c, w in work_levels(l) if (w, c) >= (s.wide is not None, s.chunk)]


def work_plan(l) -> Work:
    """The layer's Work: the first of ``scratch_levels`` that its scratch tensor's room (``l.scratch_room``: its
    bytes after the ring of an in-place convolution, match.py) holds; else ``stack_work``."""
    call = _call(l)
    unit = l.k if call == "conv" else (l.n if call == "inplace" else 0)
    room = getattr(l, "scratch_room", 0)
    for chunk, wide in scratch_levels(l):
        if 0 < work_bytes(l, chunk, wide) <= room:
            return Work(chunk, unit, l.k, "arg" if wide else None, getattr(l, "scratch_at", 0))
    return stack_work(l)


def _work(l) -> Work:
    if getattr(l, "work", None) is None:
        l.work = work_plan(l)
    return l.work


def _calls_pairs(l) -> bool:
    """Whether the layer calls its GEMM with two rows or more (else no two-row code: flash)."""
    if l.kind == "conv":
        return _work(l).chunk >= 2
    return l.rows >= 2


def _gemm_fn_name(l) -> str:
    tail = l.n % 8 == 4
    pairs = _calls_pairs(l) and pair_ok(l.k, l.n)
    wide = {"arg": "_w", "frame": "_wf"}.get(_work(l).wide, "") if pairs else ""
    own = f"_i{l.instruction}" if _own_rights(l) is not None else ""
    return (f"mcu_gen_gemm_k{l.k}{f'_n{l.n}' if pairs else ''}{'_t4' if tail else ''}{wide}"
            f"_{'m' if l.act_min < 0 else ''}{abs(l.act_min)}_{'m' if l.act_max < 0 else ''}{abs(l.act_max)}{own}")


def _smmlar_layer_source(l: GemmLayer) -> str:
    work = _work(l)
    v = _gemm_values(l)
    pre = v["pre"]
    words, end8 = l.stream()
    call = _call(l)
    v.update(stream=table("uint32_t", f"{pre}Stream", words, per_line=8, align=8, fmt="hex"), end8=end8,
             fn=_gemm_fn_name(l), call=call, chunk=work.chunk or None,
             work_stack=work.bytes if work.offset is None and work.bytes else 0,
             work_offset=work.offset if work.offset is not None else None,
             wide_at=work.wide_at if work.wide == "arg" else None)
    return render("generated/dsp_smmlar_layer.cpp.j2", **v)


def _add_layer_source(l: AddLayer, plan) -> str:
    ta, tb, ra, right = plan
    v = _header(l)
    pre = v["pre"]
    v.update(numel=l.numel, act_min=l.act_min, act_max=l.act_max, out_mult=l.out_mult, ra=ra, right=right,
             table_a=table("int32_t", f"{pre}TableA", ta, per_line=8, align=4),
             table_b=table("int32_t", f"{pre}TableB", tb, per_line=8, align=4),
             checks=l.checks + [allowed(0, 13, True, l), allowed(4, 13, True, l)], bound=bound(l, 0, 4, 13))
    return render("generated/dsp_add_layer.cpp.j2", **v)


def generate(program: Program, kernels) -> Generated:
    """The generated layers for this program and the C++ file that holds them. ``kernels``: the
    selected library kernels (their fn/prepare are the fallback of each generated prepare)."""
    layers, skipped = eligible(program)
    add_plans = {l.instruction: add_dsp_plan(l) for l in layers if l.kind == "add"}
    skipped += [(i, ADD_OPS[0], r) for i, r in add_plans.items() if isinstance(r, str)]
    layers = [l for l in layers if l.kind != "add" or not isinstance(add_plans[l.instruction], str)]
    g = Generated(layers=layers, skipped=sorted(skipped))
    if not layers:
        return g
    set_places(program, layers)
    by_op = {k.op: k for k in kernels}
    parts = [PRELUDE, ROWS_SOURCE]
    fns = {}
    for l in layers:
        if l.kind not in ("depthwise3x3", "add") and l.requant_kind == "smmlar":
            name = _gemm_fn_name(l)
            pairs = _calls_pairs(l) and pair_ok(l.k, l.n)
            fns.setdefault(name, (l.k, l.n, l.n % 8 == 4, l.act_min, l.act_max, pairs, _own_rights(l),
                                  _work(l).wide if pairs else None))
    for name, sig in fns.items():
        parts.append(_gemm_fn_source(name, *sig))
    if add_plans:
        parts.append(ADD_SOURCE)
    for l in layers:
        if l.kind == "add":
            parts.append(_add_layer_source(l, add_plans[l.instruction]))
        elif l.kind == "depthwise3x3":
            parts.append(_dw_layer_source(l))
        elif l.requant_kind == "smmlar":
            parts.append(_smmlar_layer_source(l))
        else:
            parts.append(_layer_source(l))
    parts += prepare_hooks_source(layers, by_op, g)
    g.source = "\n".join(parts)
    return g
