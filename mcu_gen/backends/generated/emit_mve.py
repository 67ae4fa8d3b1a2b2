"""The C++ of the MVE generated kernels (Cortex-M55, generated_mve.py): per layer the values of its
template in templates/generated/mve_*.cpp.j2 (the inline-assembly MAC and depthwise blocks, the layers,
the adds) and ``source``, which writes the whole generated_kernels.cpp of a program."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated import emit_dsp, exactness, hooks, mve_add
from mcu_gen.backends.generated.layers import CONV_SCRATCH_ARG
from mcu_gen.backends.render import allowed, bound, describe, prefix, render, rows, table
from mcu_gen.paths import KERNELS_GENERATED

# The static C++ every generated MVE file starts with: kernels_generated/mve_prelude.h.
PRELUDE = (KERNELS_GENERATED / "mve_prelude.h").read_text(encoding="utf-8")
# The depthwise layers whose channel count is not a multiple of 4 (depthwise3x3_part): kernels_generated/mve_dw_odd.h,
# in a file only where a layer has one.
DW_PART_SOURCE = (KERNELS_GENERATED / "mve_dw_odd.h").read_text(encoding="utf-8")
CHECKS_MARKER = "// Load-time checks"


def mac_asm(nk: int, tail: int, rows: int, rowptr: tuple | None = None) -> list:
    """The MAC block of `rows` (2 or 1) rows x 4 channels over K = nk chunks of 16 (the last one `tail`
    bytes, 0 = whole). The first chunk starts the accumulators (VMLADAV), the others add. A partial last
    chunk loads the activations predicated (VCTP.8 at the start, its count in a0 before the first MAC
    writes it; VPST before the loads: zeros past K);
    the weights are zero padded.

    Scheduled for the Cortex-M55's beat overlap (docs/cycles.md: a vector load and a vector
    data-processing instruction that follow each other overlap): loads and VMLADAVAs alternate, the
    next chunk's activations are loaded (into the other pair of registers, p1/q1) while this chunk's
    last MACs run, and the weights rotate through three registers (u, v, s) so that each load goes
    to a register no pending MAC still reads. Per chunk of 2 rows 6 loads and 8 MACs: 12 overlapped
    instructions and 2 MACs back to back (16 cycles for 128 MACs; was 20)."""
    acts = [("p0", "q0"), ("p1", "q1")]
    xs = ["x0", "x1"][:rows]
    lines = ["mov %[a0], #" + str(tail), "vctp.8 %[a0]"] if tail and nk else []  # a0: not yet written

    def act_loads(j):
        regs = acts[j % 2][:rows]
        if rowptr:  # two neighbouring windows read in place: kernel row j // cpr at r<ky>, the second d bytes on
            cpr, d = rowptr
            r = f"%[r{j // cpr}]"
            return [f"vldrb.8 %q[{regs[0]}], [{r}], #16", f"vldrb.8 %q[{regs[1]}], [{r}, #{d - 16}]"]
        if j == nk - 1 and tail:
            return ["vpst" + "t" * (rows - 1)] + [f"vldrbt.8 %q[{r}], [%[{x}]]" for r, x in zip(regs, xs)]
        return [f"vldrb.8 %q[{r}], [%[{x}]], #16" for r, x in zip(regs, xs)]

    lines += act_loads(0)
    for j in range(nk):
        op = "vmladav.s8" if j == 0 else "vmladava.s8"
        p, q = acts[j % 2]
        wl = lambda c, r: f"vldrb.8 %q[{r}], [%[w]], #16"  # noqa: E731  (weights of channel c of the chunk)
        nxt = act_loads(j + 1) if j + 1 < nk else []
        if rows == 2:
            mac = lambda c, x, r: f"{op} %[{'ab'[x]}{c}], %q[{(p, q)[x]}], %q[{r}]"  # noqa: E731
            seq = [wl(0, "u"), mac(0, 0, "u"), wl(1, "v"), mac(0, 1, "u"), wl(2, "s"), mac(1, 0, "v"),
                   wl(3, "u"), mac(1, 1, "v")]
            if nxt and len(nxt) == 2:  # L p', D a2, L q', D b2
                seq += [nxt[0], mac(2, 0, "s"), nxt[1], mac(2, 1, "s")]
            else:  # VPST + two predicated loads (the tail chunk), or nothing left to load
                seq += nxt + [mac(2, 0, "s"), mac(2, 1, "s")]
            seq += [mac(3, 0, "u"), mac(3, 1, "u")]
        else:
            mac = lambda c, r: f"{op} %[a{c}], %q[{p}], %q[{r}]"  # noqa: E731
            seq = [wl(0, "u"), mac(0, "u"), wl(1, "v"), mac(1, "v"), wl(2, "u"), mac(2, "u"), wl(3, "v"),
                   mac(3, "v")] + nxt
        lines += seq
    return lines


def direct_ok(kh: int, run: int, d: int) -> bool:
    """Whether conv_direct's block can read two windows in place: at most 3 kernel rows (registers),
    rows of whole chunks, the second window within VLDRB's offset of the first's pointer."""
    return kh <= 3 and run % 16 == 0 and -127 <= d - 16 <= 127


def direct_struct(kh: int, cpr: int, d: int) -> str:
    """The C++ struct MacD<kh>_<cpr>_<d>: the 2-pixel MAC block over windows read in place from kh row
    pointers (cpr chunks per kernel row, the second pixel d bytes on), fused with requant_pair_asm."""
    return render("generated/mve_direct_struct.cpp.j2", kh=kh, cpr=cpr, d=d, two=mac_asm(kh * cpr, 0, 2, rowptr=(cpr, d)),
                  variants=requant_variants(lambda full, sign: requant_pair_asm(full, sign, ("t", "t", "t2"))))


def requant_variants(asm) -> list:
    """The requantization variants a struct's template picks at compile time (its kOut, kMin, kMax): (condition,
    instructions, whether it clamps by VMAX / VMIN). ``asm(full_range, sign)``: the instructions. Under a fused ReLU
    (kMin >= kOut: exactness.sign_free) without the round-half-away fix-up of negative values (VSHR, VADD): a
    negative value's quotient is <= 0 under either rounding and clamps to kMin alike."""
    return [("kMin == -128 && kMax == 127 && kOut == -128", asm(True, False), False),
            ("kMin == -128 && kMax == 127", asm(True, True), False),
            ("kMin >= kOut", asm(False, False), True),
            ("true", asm(False, True), True)]


def requant_pair_asm(full_range: bool, sign: bool = True, tmp=("a0", "a1", "a2")) -> list:
    """After mac_asm(rows=2) (fast mode): the two rows' 4 accumulators into vectors (p1, q1), then
    exactly requant4 of the prelude (init added, VQRDMULH, the round-half-away fix-up (not under a fused
    ReLU: ``sign`` False), VRSHL, the output offset, the clamp) and the stores of 4 bytes per row (row 2
    at y + kN). Constants per block of 4 channels from one pointer (Requant.fused: init, mult, minus the
    right shift). The clamp: two saturating narrows (VQMOVNB.S32, .S16) where it is [-128, 127], else
    VMAX / VMIN. Loads are placed between the data-processing instructions they feed (docs/cycles.md
    overlap). ``tmp``: the core registers that take the output offset and the clamp's bounds (the accumulators
    a0-a2, free by then, where MAC and requantization are one asm statement; MacD's second statement reads them
    as inputs and has temporaries of its own: GCC allows 30 operands)."""
    a, b = "%q[p1]", "%q[q1]"
    lines = ["vmov %q[p1][2], %q[p1][0], %[a0], %[a2]", "vmov %q[p1][3], %q[p1][1], %[a1], %[a3]",
             "vldrw.u32 %q[u], [%[c]], #16", f"vadd.i32 {a}, {a}, %q[u]",
             "vldrw.u32 %q[v], [%[c]], #16", f"vqrdmulh.s32 {a}, {a}, %q[v]",
             "vmov %q[q1][2], %q[q1][0], %[b0], %[b2]", f"vshr.s32 %q[p0], {a}, #31",
             "vmov %q[q1][3], %q[q1][1], %[b1], %[b3]", f"vadd.i32 {b}, {b}, %q[u]",
             "vldrw.u32 %q[s], [%[c]], #16", f"vqrdmulh.s32 {b}, {b}, %q[v]",
             f"vadd.i32 {a}, {a}, %q[p0]", f"vshr.s32 %q[q0], {b}, #31", f"vrshl.s32 {a}, {a}, %q[s]",
             f"vadd.i32 {b}, {b}, %q[q0]", f"mov %[{tmp[0]}], %[ko]", f"vrshl.s32 {b}, {b}, %q[s]",
             f"vadd.i32 {a}, {a}, %[{tmp[0]}]", f"vadd.i32 {b}, {b}, %[{tmp[0]}]"]
    if not sign:
        fixup = {f"vshr.s32 %q[p0], {a}, #31", f"vadd.i32 {a}, {a}, %q[p0]", f"vshr.s32 %q[q0], {b}, #31",
                 f"vadd.i32 {b}, {b}, %q[q0]"}
        lines = [i for i in lines if i not in fixup]
    if full_range:
        lines += [f"vqmovnb.s32 {a}, {a}", f"vqmovnb.s32 {b}, {b}", f"vqmovnb.s16 {a}, {a}",
                  f"vstrb.32 {a}, [%[y]], #4", f"vqmovnb.s16 {b}, {b}", f"vstrb.32 {b}, [%[y], %[kb]]"]
    else:
        lines += [f"mov %[{tmp[1]}], %[kmin]", f"vdup.32 %q[u], %[{tmp[1]}]", f"mov %[{tmp[2]}], %[kmax]",
                  f"vdup.32 %q[v], %[{tmp[2]}]",
                  f"vmax.s32 {a}, {a}, %q[u]", f"vmax.s32 {b}, {b}, %q[u]",
                  f"vmin.s32 {a}, {a}, %q[v]", f"vstrb.32 {a}, [%[y]], #4", f"vmin.s32 {b}, {b}, %q[v]",
                  f"vstrb.32 {b}, [%[y], %[kb]]"]
    return lines


def dw_asm(xs: int) -> list:
    """The 9 taps of a depthwise 3x3 group, `xs` bytes between pixels: the row pointer advanced by the
    activation load, or by an ADD where xs > 127 (beyond the post-increment's reach).

    Software pipelined for the Cortex-M55's beat overlap (docs/cycles.md): tap t's two loads
    (activations, weights) alternate with the VADD of tap t - 1's product and tap t's VMUL, so
    that after the first tap every instruction follows one of the other kind (was: two loads, then
    VMUL and VADD back to back)."""
    def loads(ky, kx):
        if xs <= 127:
            return [f"vldrb.s32 %q[a], [%[r{ky}]], #{xs}"], ["vldrb.s32 %q[b], [%[w]], #4"]
        return ([f"vldrb.s32 %q[a], [%[r{ky}]]"] + ([f"add %[r{ky}], %[r{ky}], #{xs}"] if kx < 2 else []),
                ["vldrb.s32 %q[b], [%[w]], #4"])
    lines = []
    for t in range(9):
        la, lb = loads(t // 3, t % 3)
        if t == 0:
            lines += la + lb
        else:
            lines += la + ["vadd.i32 %q[acc], %q[acc], %q[m]"] + lb
        lines.append("vmul.i32 %q[m], %q[a], %q[b]")
    lines.append("vadd.i32 %q[acc], %q[acc], %q[m]")
    return lines


def dw_row_asm(xs: int, kw: int) -> list:
    """The kw taps of one kernel row of a depthwise group (kernels other than 3x3: depthwise_kxk), `xs` bytes
    between pixels from one row pointer, pipelined as dw_asm; w left on the next row's weights."""
    lines = []
    for t in range(kw):
        la = ([f"vldrb.s32 %q[a], [%[r]], #{xs}"] if xs <= 127 else
              ["vldrb.s32 %q[a], [%[r]]"] + ([f"add %[r], %[r], #{xs}"] if t < kw - 1 else []))
        lb = ["vldrb.s32 %q[b], [%[w]], #4"]
        lines += la + (["vadd.i32 %q[acc], %q[acc], %q[m]"] if t else []) + lb
        lines.append("vmul.i32 %q[m], %q[a], %q[b]")
    lines.append("vadd.i32 %q[acc], %q[acc], %q[m]")
    return lines


def dw_row_struct(xs: int, kw: int) -> str:
    """The C++ struct DwRowXS_KW: one kernel row's taps (dw_row_asm) for depthwise_kxk."""
    return render("generated/mve_dw_row_struct.cpp.j2", name=f"DwRow{xs}_{kw}", xs=xs, kw=kw, taps=dw_row_asm(xs, kw))


def dw_pixel_asm(g: int, stride: int, c: int, full_range: bool, sign: bool = True) -> list:
    """One output pixel of 4 channels of a 3x3 depthwise (fast mode), all of it: the init, the 9 taps
    software pipelined as dw_asm, requant4 of the prelude and the store, the three row pointers left
    on the next output pixel (the third tap of a row steps by stride * g - 2 * g) and y on the next
    pixel (c bytes on). Weights at fixed offsets from w, constants at c (Requant.fused: init, mult,
    minus the right shift). The clamp and ``sign`` as requant_pair_asm."""
    def la(ky, kx):
        inc = g if kx < 2 else stride * g - 2 * g
        return f"vldrb.s32 %q[a], [%[r{ky}]], #{inc}" if inc else f"vldrb.s32 %q[a], [%[r{ky}]]"
    lb = lambda t: f"vldrb.s32 %q[b], [%[w], #{4 * t}]" if t else "vldrb.s32 %q[b], [%[w]]"  # noqa: E731
    lines = ["mov %[k], %[ko]", "vldrw.u32 %q[acc], [%[c]]"]
    for t in range(9):
        lines += [la(t // 3, t % 3)] + (["vadd.i32 %q[acc], %q[acc], %q[m]"] if t else []) + [lb(t)]
        lines.append("vmul.i32 %q[m], %q[a], %q[b]")
    lines += ["vldrw.u32 %q[b], [%[c], #16]", "vadd.i32 %q[acc], %q[acc], %q[m]", "vldrw.u32 %q[m], [%[c], #32]",
              "vqrdmulh.s32 %q[acc], %q[acc], %q[b]"]
    lines += ["vshr.s32 %q[a], %q[acc], #31", "vadd.i32 %q[acc], %q[acc], %q[a]"] if sign else []
    lines += ["vrshl.s32 %q[acc], %q[acc], %q[m]", "vadd.i32 %q[acc], %q[acc], %[k]"]
    if full_range:
        lines += ["vqmovnb.s32 %q[acc], %q[acc]", "vqmovnb.s16 %q[acc], %q[acc]"]
    else:
        lines += ["mov %[k], %[kmin]", "vdup.32 %q[a], %[k]", "vmax.s32 %q[acc], %q[acc], %q[a]",
                  "mov %[k], %[kmax]", "vdup.32 %q[a], %[k]", "vmin.s32 %q[acc], %q[acc], %q[a]"]
    lines += [f"vstrb.32 %q[acc], [%[y]], #{c}"] if c <= 127 else ["vstrb.32 %q[acc], [%[y]]", f"add %[y], %[y], #{c}"]
    return lines


def dw_fused(g: int, stride: int, c: int) -> bool:
    """Whether dw_pixel_asm's post-increments reach (VLDRB.S32: -127..127)."""
    return g <= 127 and abs(stride * g - 2 * g) <= 127 and c <= 4095


def mac_struct(nk: int, tail: int) -> str:
    """The C++ struct MacNK_TAIL: the MAC blocks of 2 rows and of 1 row (templates/generated/mve_mac_struct.cpp.j2)."""
    two = mac_asm(nk, tail, 2)
    return render("generated/mve_mac_struct.cpp.j2", nk=nk, tail=tail, two=two, one=mac_asm(nk, tail, 1),
                  variants=requant_variants(lambda full, sign: two + requant_pair_asm(full, sign)))


def dw_struct(xs: int, stride: int = 0, c: int = 0) -> str:
    """The C++ struct DwXS (DwXS_STRIDE_C where a fused pixel block is possible): the 9 taps of a
    depthwise group (templates/generated/mve_dw_struct.cpp.j2), and the fused pixel (dw_pixel_asm)."""
    fused = bool(stride) and dw_fused(xs, stride, c)
    return render("generated/mve_dw_struct.cpp.j2", xs=xs, taps=dw_asm(xs), name=f"Dw{xs}_{stride}_{c}" if stride else f"Dw{xs}",
                  fused=fused, variants=requant_variants(lambda full, sign: dw_pixel_asm(xs, stride, c, full, sign))
                  if fused else [])


def _pad4(values, fill=0) -> np.ndarray:
    v = np.asarray(values, np.int64).reshape(-1)
    n4 = (v.size + 3) // 4 * 4
    return np.concatenate([v, np.full(n4 - v.size, fill, np.int64)])


def _requant_tables(pre: str, l, init) -> dict:
    """Init, Mult, Left (the left shifts; scalar mode: the shifts), Right (minus the right shifts) and
    Mask (-1 where a right shift rounds) per channel, padded to whole vectors."""
    s = l.src
    shifts = np.asarray(s.shifts, np.int64)
    right, left = np.maximum(-shifts, 0), np.maximum(shifts, 0)
    return {"init": table("int32_t", f"{pre}Init", _pad4(init), per_line=8, align=16),
            "mult": table("int32_t", f"{pre}Mult", _pad4(s.mults), per_line=8, align=16),
            "left": table("int32_t", f"{pre}Left", _pad4(shifts if l.mode == "scalar" else left), per_line=16, align=16),
            "right": table("int32_t", f"{pre}Right", _pad4(-right), per_line=16, align=16),
            "mask": table("int32_t", f"{pre}Mask", _pad4(np.where(right > 0, -1, 0)), per_line=16, align=16),
            "fused": (table("int32_t", f"{pre}Fused", np.stack([_pad4(init).reshape(-1, 4), _pad4(s.mults).reshape(-1, 4),
                                                             _pad4(-right).reshape(-1, 4)], axis=1), per_line=12, align=16)
                      if l.mode == "fast" and (s.kind == "depthwise" or s.n % 4 == 0) else None)}  # gemm_pair's fused blocks


_MODE = {"fast": 0, "vector": 1, "scalar": 2}
_IO_ARGS = {"pointwise": (0, 13), "conv": (0, 13), "linear": (0, 11), "depthwise": (0, 14)}


def _layer_source(l) -> tuple:
    """(C++ of one layer, name of the inline-assembly struct it uses: MacN_T or DwX)."""
    s = l.src
    pre = prefix(s.name)
    in_arg, out_arg = _IO_ARGS[s.kind]
    v = {"name": s.name, "instruction": int(s.instruction), "op": s.op, "pre": pre, "macs": f"{s.macs:,}",
         "mode": _MODE[l.mode], "mode_name": l.mode, "kind": s.kind, "out_offset": s.out_offset,
         "act_min": s.act_min, "act_max": s.act_max,
         "weight_bytes": f"{l.weight_bytes:,}", "ring_arg": None, "n": getattr(s, "n", None),
         "weights": table("int8_t", f"{pre}Weights", l.packed_weights(), per_line=32, align=16)}
    extra_checks = []
    if s.kind == "depthwise":
        g, in_scratch = l.ring
        # the ring: a chunk's input columns (one row, depthwise_cols), else kh padded rows
        ring_bytes = ((l.cols - 1) * s.stride + s.kw) * g if l.cols else s.kh * (s.w + 2 * s.pad_w) * g
        if l.cols:
            helper, dw_fn, kernel = f"DwRow{g}_{s.kw}", "depthwise_cols", f"{s.kw}, {l.cols}, "
        elif s.is_3x3:
            helper, dw_fn, kernel = f"Dw{g}_{s.stride}_{s.c}", "depthwise3x3" if s.c % 4 == 0 else "depthwise3x3_part", ""
        else:  # one kernel row's taps a block (depthwise_kxk)
            helper, dw_fn, kernel = f"DwRow{g}_{s.kw}", "depthwise_kxk", f"{s.kh}, {s.kw}, "
        v.update(_requant_tables(pre, l, l.depthwise_init()), helper=helper, g=g, ring_bytes=ring_bytes,
                 dw_fn=dw_fn, kernel=kernel,
                 stack_ring=not in_scratch, h=s.h, w=s.w, c=s.c, oh=s.oh, ow=s.ow, stride=s.stride,
                 pad_h=s.pad_h, pad_w=s.pad_w, zero_point=-s.in_offset,
                 what=(f"{s.kh}x{s.kw} depthwise, {s.c} channels, {s.h}x{s.w} -> {s.oh}x{s.ow}, stride {s.stride}, "
                       f"padding {s.pad_h},{s.pad_w}; rows of {g} channels through a ring of {ring_bytes} bytes in "
                       + ("the scratch tensor" if in_scratch else "the stack")
                       + (f", {l.cols} output pixels a chunk" if l.cols else "")))
        if in_scratch:  # the ring: the scratch tensor (argument 13), apart from the input and output
            v["ring_arg"], extra_checks = 13, ["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"]
    else:
        v.update(_requant_tables(pre, l, s.acc_init), helper=f"Mac{l.nk}_{s.k % 16}", k=s.k, rows_count=s.rows,
                 inplace=s.inplace_ok, what=describe(s))
        if s.kind == "conv":
            kp = l.nk * 16
            v.update(what=describe(s, gathered=kp), kp=kp, geometry=list(s.geometry), zero_point=s.zero_point,
                     rows=rows(s), ring_arg=emit_dsp.ring_arg(s),  # in place: the ring of saved rows is the scratch
                     helper=f"Mac{l.nk}_0")  # the windows are zero padded: no tail predication
            v["direct"] = _direct_name(l) or "NoDirect"
            v["patch_at"] = l.patch_offset  # the two windows in the scratch tensor, else on the stack
            v["pairs"] = l.patch_pairs
            if v["patch_at"] is not None and v["ring_arg"] is None:
                v["ring_arg"], extra_checks = CONV_SCRATCH_ARG, list(s.scratch_checks)
    v["bound"] = bound(s, in_arg, out_arg, v["ring_arg"])
    v["checks"] = s.checks + extra_checks + [allowed(in_arg, out_arg, s.inplace_ok, s)]
    return render("generated/mve_layer.cpp.j2", **v), v["helper"]


def _direct_name(l) -> str | None:
    """The MacD block a conv layer reads its windows in place with (conv_patches' Direct), if any."""
    s = l.src
    if s.kind != "conv" or l.mode != "fast" or s.n % 4 or s.n > 127:
        return None
    g = list(s.geometry)
    kh, run, d = g[3], g[4] * g[2], g[6] * g[2]
    return f"MacD{kh}_{run // 16}_{d}" if direct_ok(kh, run, d) else None


def checks_source() -> str:
    """The load-time checks (tensor_is, constant_is, ..., output_allowed) of the DSP prelude
    (kernels_generated/dsp_prelude.h), shared so that both generators match instructions the same way."""
    i = emit_dsp.PRELUDE.index(CHECKS_MARKER)
    return "// " + "-" * 75 + "\n" + emit_dsp.PRELUDE[i:]


def _add_layer_source(l) -> str:
    s, p = l.src, l.plan
    w32 = lambda x: int(exactness.wrap_i32(x))  # noqa: E731  (int32 two's complement, as the lanes hold it)
    return render("generated/mve_add_layer.cpp.j2", name=s.name, instruction=int(s.instruction), op=s.op, numel=s.numel,
                  per_vector=p.instructions_per_vector, describe=p.describe(),
                  checks=s.checks + [allowed(0, 13, True, s), allowed(4, 13, True, s)], bound=bound(s, 0, 4, 13),
                  scale_a=w32(p.scale_a), scale_b=w32(p.scale_b), act_min=s.act_min, act_max=s.act_max,
                  ca=w32(-s.a_zp * p.scale_a), cb=w32(-s.b_zp * p.scale_b), ma=w32(s.a_mult), mb=w32(s.b_mult),
                  mo=w32(s.out_mult), zo=s.out_zp, body=["dlstp.32 lr, %[n]", "1:", *mve_add.add_asm(s, p), "letp lr, 1b"])


def source(layers, by_op: dict, g) -> str:
    """The generated_kernels.cpp of these MVE layers (generated_mve.eligible); records each operator's
    prepare function in ``g``. ``by_op``: the selected library kernel of each operator (the fallback)."""
    bodies, helpers = [], {}
    for l in layers:
        if l.kind == "add":
            bodies.append(_add_layer_source(l))
            continue
        text, helper = _layer_source(l)
        bodies.append(text)
        direct = _direct_name(l)
        if direct:
            helpers[direct] = direct_struct(*(int(x) for x in direct[4:].split("_")))
        if helper.startswith("DwRow"):
            helpers[helper] = dw_row_struct(*(int(x) for x in helper[5:].split("_")))
        elif helper.startswith("Dw"):
            helpers[helper] = dw_struct(*(int(x) for x in helper[2:].split("_")))
        else:
            nk, tail = (int(v) for v in helper[3:].split("_"))
            helpers[helper] = mac_struct(nk, tail)
    part = [DW_PART_SOURCE] if any(l.kind == "depthwise" and l.src.c % 4 for l in layers) else []
    parts = [PRELUDE, emit_dsp.ROWS_SOURCE, *helpers.values(), *part, checks_source(), *bodies]
    parts += hooks.prepare_hooks_source(layers, by_op, g)
    return "\n".join(parts)
