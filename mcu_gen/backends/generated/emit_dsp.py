"""The DSP cores' generated kernels (Cortex-M33, M4): per layer the values of its template in
templates/generated/dsp_*.cpp.j2 (register-blocked SMLAD GEMMs, the smmlar GEMM in assembly, depthwise
3x3, the add by tables): constant tables, sizes; and ``generate``, which writes the whole
generated_kernels.cpp of a program. The instruction sequences are dsp_gemm_asm.py's (the smmlar GEMM),
dsp_depthwise_asm.py's (the planar depthwise rows) and dsp_depthwise_direct_asm.py's (the stride-2 depthwise layers
straight from the input); where a layer's per-call buffers go, dsp_work.py's."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.dsp_conv_cols import cols_fn_name, cols_fn_sig, cols_work, gemm_cols_asm_body
from mcu_gen.backends.generated.dsp_depthwise_asm import (dw_all_asm, dw_all_ok, dw_blocks, dw_plane, dw_rights,
                                                           dw_cols, dw_rows_asm, dw_window)
from mcu_gen.backends.generated.dsp_depthwise_direct_asm import dw_direct_asm, dw_direct_block, dw_direct_ok
from mcu_gen.backends.generated.dsp_gemm_asm import gemm_asm_body
from mcu_gen.backends.generated.dsp_gemm_pairs import pair_ok
from mcu_gen.backends.generated.dsp_work import (CONV_STACK_BYTES, call_kind, calls_pairs, inplace_direct, layer_work,
                                                 pre_order, quads_only, stack_bytes, stem_chunk)
from mcu_gen.backends.generated.exactness import add_dsp_plan, wrap32
from mcu_gen.backends.generated.hooks import prepare_hooks_source
from mcu_gen.backends.generated.layers import (ADD_OPS, CONV_SCRATCH_ARG, AddLayer, DepthwiseLayer,
                                               GemmLayer, Generated)
from mcu_gen.backends.generated.match import eligible, left_out
from mcu_gen.backends.render import allowed, bound, describe, prefix, render, rows, set_places, table
from mcu_gen.paths import KERNELS_GENERATED
from mcu_gen.program.ir import Program


# -- C++ ------------------------------------------------------------------------------------------
# The static C++ every generated DSP file starts with: kernels_generated/dsp_prelude.h.
PRELUDE = (KERNELS_GENERATED / "dsp_prelude.h").read_text(encoding="utf-8")


# The input rows of a generated convolution (direct / in place): kernels_generated/dsp_rows.h.
ROWS_SOURCE = (KERNELS_GENERATED / "dsp_rows.h").read_text(encoding="utf-8")


# A convolution on widened input columns (dsp_conv_cols.py): kernels_generated/dsp_cols.h.
COLS_SOURCE = (KERNELS_GENERATED / "dsp_cols.h").read_text(encoding="utf-8")


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
    v.update(what=describe(l), weight_bytes=f"{l.weight_bytes:,}", k=l.k, n=l.n, n_out=l.n_out, k_in=l.k_in, rows_count=l.rows,
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
        cols = [{"kx0": cu[c][0], "kx1": cu[c][1], "x": ox0 * l.sw - l.pad_w, "y": ox0 * l.c, "count": ox1 - ox0,
                 "ox0": ox0, "ox1": ox1,
                 "init": 0 if l.offset_in_taps else (r * len(cu) + c) * l.c} for ox0, ox1, c in DepthwiseLayer.runs(cc)]
        out.append({"oy0": oy0, "oy1": oy1, "ky0": ru[r][0], "ky1": ru[r][1], "cols": cols})
    return out


def _dw_init(l: DepthwiseLayer, scale: int) -> np.ndarray:
    """The accumulator starts (DepthwiseLayer.init_table) times ``scale``; with a group of the last channels (tail)
    zero starts pad its row to whole groups of 4, as dw_start reads them."""
    init = l.init_table().astype(np.int64) * scale
    if l.tail:
        init = np.pad(init, ((0, 0), (0, -l.c % 4)))
    return wrap32(init)


def _dw_layer_source(l: DepthwiseLayer) -> str:
    v = _header(l)
    pre = v["pre"]
    _, _, ru, cu = l.classes()  # the taps inside the input per row / column border class
    win = dw_window(l)
    # the in-place passes step 4 * groups channels up to C - tail: whole passes only with one group a pass
    assert not (l.tail and l.inplace_ok) or win[2] == 1, "a group of the last channels after passes of one group"
    consts = l.smmlar()
    scale = 2 if consts is not None else 1  # smmlar: doubled weights and starts (requant_smmlar)
    if consts is not None:
        v.update(mult=table("int32_t", f"{pre}Mult", consts, per_line=9), shift=None, round=None)
    else:
        v.update(_requant_tables(l, pre))
    v.update(c=l.c, h=l.h, w=l.w, oh=l.oh, ow=l.ow, stride=l.stride, stride_w=l.sw, pad_h=l.pad_h, pad_w=l.pad_w,
             kh=l.kh, kw=l.kw, taps=l.taps, offset_in_taps=l.offset_in_taps,
             off2=f"0x{(l.in_offset & 0xFFFF) * 0x10001:08x}u",
             weight_bytes=f"{l.weight_bytes:,}", doubled=scale == 2, row_taps=str(ru), col_taps=str(cu),
             weights=table("uint32_t", f"{pre}Weights", l.packed_weights().astype(np.int64) * scale, per_line=8,
                           align=8, fmt="pair") if l.c % 4 == 0 or l.tail else None,  # the NHWC path's (groups of 4)
             init=table("int32_t", f"{pre}Init", _dw_init(l, scale), per_line=8),
             inplace=l.inplace_ok,
             xs=4 * win[2] if l.inplace_ok else l.c, groups=win[2] if l.inplace_ok else l.c // 4, tail=l.tail,
             # (whole groups, last channels) of each pass over the channels: in place a loop of passes of whole
             # groups, then one of the last c % 4 channels (tail), else one pass of all
             passes=([(win[2], 0)] + ([(0, l.tail)] if l.tail else [])) if l.inplace_ok else [(l.c // 4, l.tail)],
             mode={"smmlar": "kSmmlar", "fast": "kFast", "any": "kAny"}[l.requant_kind],
             out_offset=l.out_offset, act_min=l.act_min, act_max=l.act_max, row_runs=_dw_runs(l))
    win_rows, ring, _ = win
    plane = dw_plane(l)
    v["planar"], v["all_asm"], v["direct_asm"] = plane is not None, None, None
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
        # one rows function in assembly per right shift of the channels (SSAT's immediate), or where the buffer
        # holds every row the layer reads, one function for all the channels (widening included)
        # stride 2: straight from the NHWC input (dw_direct_asm), the planar C++ on cores without DSP
        direct = consts is not None and dw_direct_ok(l)
        whole = consts is not None and not direct and dw_all_ok(l, plane)
        asm = [{"right": rt, "body": [i.replace("%=", f"_{l.name}_r{rt}") for i in dw_rows_asm(l, plane, rt)]}
               for rt in dw_rights(l)] if consts is not None and not whole and not direct else None
        if whole:
            v["all_asm"] = [i.replace("%=", f"_{l.name}_all") for i in dw_all_asm(l, plane, dw_rights(l))]
        v["direct_asm"] = [i.replace("%=", f"_{l.name}_direct") for i in dw_direct_asm(l, dw_rights(l))] if direct else None
        if direct:
            v["direct_block"] = table("uint32_t", f"{pre}Direct", dw_direct_block(l), per_line=dw_direct_block(l).shape[1],
                                      align=8, fmt="hex")
        v.update(plane_rows=rows_, plane_row=row, pad_value=-l.in_offset,
                 plane_pairs=asm is not None and dw_blocks(l, plane),  # DwPlane<kPairs>: even row counts
                 block=table("uint32_t", f"{pre}Block", block, per_line=10, align=8, fmt="hex"),
                 rows_asm=asm,
                 extra_ring=["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"] if ring is not None else [])
        v.update(win_rows=0, ring_arg=ring, bound=bound(l, 0, 14, ring), linear_rows=False, row_runs=[],
                 checks=l.checks + v.pop("extra_ring") + [allowed(0, 14, l.inplace_ok, l)])
        return render("generated/dsp_depthwise_layer.cpp.j2", **v)
    # the input rows at a fixed distance (not in place, or a window that holds the whole input: DwWindow::kWhole):
    # one dw_pixels call per run of rows and columns of one border class
    assert l.c % 4 == 0 or l.tail, "dw_pixels reads words of 4 channels (match._depthwise: planar, tail or rejected)"
    v["linear_rows"] = not l.inplace_ok or win_rows >= l.h + l.pad_h
    v["cols"] = dw_cols(l)  # in place over one row in chunks of this many output pixels (DwCols), else 0
    if v["cols"]:
        v["cols_bytes"] = 4 * ((v["cols"] - 1) * l.sw + l.kw)
    extra = ["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"] if ring is not None else []
    v.update(win_rows=win_rows, ring_arg=ring, bound=bound(l, 0, 14, ring),
             checks=l.checks + extra + [allowed(0, 14, l.inplace_ok, l)])
    return render("generated/dsp_depthwise_layer.cpp.j2", **v)


def _gemm_fn_source(name: str, k: int, n: int, tail: bool, act_min: int, act_max: int, pairs: bool,
                    rights, wide: str | None, direct: bool = False, pair_rows: bool = True, sign: bool = True) -> str:
    back = direct and n > k
    return render("generated/dsp_gemm_fn.cpp.j2", name=name, k=k, n=n, tail=tail, act_min=act_min, act_max=act_max,
                  wide=wide, direct=direct, back=back, cols=None,
                  body=gemm_asm_body(name, k, n, tail, act_min, act_max, pairs, wide, rights, back, pair_rows, sign))


def _cols_fn_source(name: str, k: int, n: int, tail: bool, act_min: int, act_max: int, cin: int, kw: int, sw: int,
                    row_bytes: int, sign: bool = True) -> str:
    """A conv_cols layer's GEMM (dsp_conv_cols.gemm_cols_asm_body; gemm_cols_c without the DSP extension)."""
    return render("generated/dsp_gemm_fn.cpp.j2", name=name, k=k, n=n, tail=tail, act_min=act_min, act_max=act_max,
                  wide=None, direct=False, back=False,
                  body=gemm_cols_asm_body(name, k, n, tail, act_min, act_max, cin, kw, sw, row_bytes, sign),
                  cols=[n, cin, kw, sw, row_bytes])


OWN_FN_MAX_N = 32  # a layer with K < OWN_FN_MAX_K and N up to this has its own two-row function (``_own_rights``)
OWN_FN_MAX_K = 36  # K <= 32 and the 27-tap stems (28): where the requantization is a large share. Above, the
# unrolled blocks cost more flash than their 1.5 cycles per output save (MNIST's K 72, N 16 layer: 11,044 B
# as its own function against 6,796 B shared, for about 3,000 estimated cycles of 390,000)


def _own_rights(l):
    """The right shifts of a layer whose two-row GEMM is its own function (blocks unrolled, each shift an
    SSAT immediate: 1.5 estimated M33 cycles less per output, about 2 KB more flash per block of 8 of K 32):
    small K and N (VWW's K 8..32 1x1 layers, the 27-tap stems), where the requantization is a large share;
    else None (the function is shared by the layers of one K, N, tail and output range)."""
    if not (calls_pairs(l) and pair_ok(l.k, l.n)) or l.k >= OWN_FN_MAX_K or l.n > OWN_FN_MAX_N:
        return None
    return tuple(int(r) for r in l.smmlar()[:, 2])


def _pair_rows(l) -> bool:
    """Whether the layer's GEMM function needs its two-row code: not the own function (four rows at a time) of a layer
    whose calls all have a multiple of 4 rows or 1 (dsp_work.quads_only: VWW's 48x48, 24x24 in-place layers, the
    stems' chunks of 20 windows)."""
    return not (_own_rights(l) is not None and quads_only(l))


def _gemm_fn_name(l) -> str:
    tail = l.n % 8 == 4
    pairs = calls_pairs(l) and pair_ok(l.k, l.n)
    wide = {"arg": "_w", "frame": "_wf", "pre": "_p", "stem": "_s"}.get(layer_work(l).wide, "") if pairs else ""
    own = f"_i{l.instruction}" if _own_rights(l) is not None else ""
    if pairs and inplace_direct(l):  # over its own input (gemm_inplace_direct): backwards where N > K
        wide += "_b" if l.n > l.k else "_d"
    return (f"mcu_gen_gemm_k{l.k}{f'_n{l.n}' if pairs else ''}{'_t4' if tail else ''}{wide}"
            f"_{'m' if l.act_min < 0 else ''}{abs(l.act_min)}_{'m' if l.act_max < 0 else ''}{abs(l.act_max)}"
            f"{'' if l.sign else '_relu'}{own}")


def _smmlar_layer_source(l: GemmLayer) -> str:
    work = layer_work(l)
    v = _gemm_values(l)
    pre = v["pre"]
    words, end8 = l.stream(pre_order(l) if work.wide in ("pre", "stem") else None)
    call = call_kind(l)
    cols = cols_work(l) if call == "conv" else None
    if cols is not None:  # conv_cols: its buffer instead of work's (never more bytes, the same place)
        v.update(stream=table("uint32_t", f"{pre}Stream", words, per_line=8, align=8, fmt="hex"), end8=end8,
                 fn=cols_fn_name(l), call="cols", chunk=cols.chunk,
                 work_stack=cols.bytes if cols.offset is None else 0, work_offset=cols.offset, wide_at=None)
        return render("generated/dsp_smmlar_layer.cpp.j2", **v)
    assert work.wide != "stem" or _own_rights(l) is not None, "conv_stem_s2 runs on the layer's own GEMM"
    v.update(stream=table("uint32_t", f"{pre}Stream", words, per_line=8, align=8, fmt="hex"), end8=end8,
             fn=_gemm_fn_name(l), call=call, chunk=(stem_chunk(l) if work.wide == "stem" else work.chunk) or None,
             wide_mode=work.wide,
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


def generate(program: Program, kernels, leave=None) -> Generated:
    """The generated layers for this program and the C++ file that holds them. ``kernels``: the
    selected library kernels (their fn/prepare are the fallback of each generated prepare). ``leave``:
    {instruction: reason} left to the library kernels (the builder's flash fit, firmware/flash_fit.py)."""
    layers, skipped = left_out(*eligible(program), leave)
    add_plans = {l.instruction: add_dsp_plan(l) for l in layers if l.kind == "add"}
    skipped += [(i, ADD_OPS[0], r) for i, r in add_plans.items() if isinstance(r, str)]
    layers = [l for l in layers if l.kind != "add" or not isinstance(add_plans[l.instruction], str)]
    # a convolution whose buffers the arena had no room for and the stack would take past the library kernel's path
    deep = {l.instruction: b for l in layers
            if l.kind == "conv" and (b := stack_bytes(l)) > max(CONV_STACK_BYTES, l.stack_room)}
    skipped += [(l.instruction, l.op, f"its windows take {deep[l.instruction]} bytes of stack (> {CONV_STACK_BYTES}): "
                 "no room for them in the arena at this layer") for l in layers if l.instruction in deep]
    layers = [l for l in layers if l.instruction not in deep]
    g = Generated(layers=layers, skipped=sorted(skipped))
    if not layers:
        return g
    set_places(program, layers)
    by_op = {k.op: k for k in kernels}
    parts = [PRELUDE, ROWS_SOURCE]
    fns, cols_fns = {}, {}
    for l in layers:
        if l.kind == "conv" and l.requant_kind == "smmlar" and cols_work(l) is not None:
            cols_fns.setdefault(cols_fn_name(l), cols_fn_sig(l))
        elif l.kind not in ("depthwise", "add") and l.requant_kind == "smmlar":
            name = _gemm_fn_name(l)
            pairs = calls_pairs(l) and pair_ok(l.k, l.n)
            fns.setdefault(name, (l.k, l.n, l.n % 8 == 4, l.act_min, l.act_max, pairs, _own_rights(l),
                                  layer_work(l).wide if pairs else None, pairs and inplace_direct(l),
                                  _pair_rows(l), l.sign))
    for name, sig in fns.items():
        parts.append(_gemm_fn_source(name, *sig))
    if cols_fns:
        parts.append(COLS_SOURCE)
    for name, sig in cols_fns.items():
        parts.append(_cols_fn_source(name, *sig))
    if add_plans:
        parts.append(ADD_SOURCE)
    for l in layers:
        if l.kind == "add":
            parts.append(_add_layer_source(l, add_plans[l.instruction]))
        elif l.kind == "depthwise":
            parts.append(_dw_layer_source(l))
        elif l.requant_kind == "smmlar":
            parts.append(_smmlar_layer_source(l))
        else:
            parts.append(_layer_source(l))
    parts += prepare_hooks_source(layers, by_op, g)
    g.source = "\n".join(parts)
    return g
