"""The C++ of the DSP cores' generated kernels (Cortex-M33, M4): per layer its constant tables and
functions (register-blocked SMLAD GEMMs, the smmlar GEMM in assembly, depthwise 3x3, the add by
tables) and ``generate``, which writes the whole generated_kernels.cpp of a program."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.exactness import add_dsp_plan, wrap32
from mcu_gen.backends.generated.hooks import bind_at_load, prepare_hooks_source
from mcu_gen.backends.generated.layers import (ADD_OPS, CONV_SCRATCH_ARG, POINTWISE_OPS, AddLayer, DepthwiseLayer,
                                               GemmLayer, Generated)
from mcu_gen.backends.generated.match import eligible
from mcu_gen.paths import KERNELS_GENERATED


# -- C++ ------------------------------------------------------------------------------------------
# The static C++ every generated DSP file starts with: kernels_generated/dsp_prelude.h.
PRELUDE = (KERNELS_GENERATED / "dsp_prelude.h").read_text(encoding="utf-8")


# The input rows of a generated convolution (direct / in place): kernels_generated/dsp_rows.h.
ROWS_SOURCE = (KERNELS_GENERATED / "dsp_rows.h").read_text(encoding="utf-8")


def rows_arg(l) -> str:
    """The C++ expression of a convolution layer's Rows object: the input, or in place the ring of
    l.ring_rows rows in the scratch tensor (compute_signature's `ring`)."""
    h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
    if not l.ring_rows:
        return f"InputRows<{w}, {cin}>{{in}}"
    return f"RingRows<{h}, {w}, {cin}, {sh}, {ph}, {ow}, {l.n}, {l.ring_rows}>{{in, ring, -1}}"



def compute_signature(ring_arg: int | None = None) -> tuple:
    """(parameters of a layer's compute function, what its Error function passes after in and out):
    ``ring_arg``, the argument whose tensor holds the layer's ring of rows, if any."""
    if ring_arg is None:
        return "const int8_t* in, int8_t* out", ""
    return ("const int8_t* in, int8_t* out, int8_t* ring",
            f",\n                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data({ring_arg})))")


def ring_arg(l) -> int | None:
    """The scratch argument of a convolution layer planned in place row by row, else None."""
    return CONV_SCRATCH_ARG if getattr(l, "ring_rows", 0) else None


def c_array(ctype: str, name: str, values, per_line: int = 16, align: int = 0) -> str:
    vals = [str(int(v)) for v in np.asarray(values).reshape(-1)]
    lines = ["  " + ", ".join(vals[i:i + per_line]) + "," for i in range(0, len(vals), per_line)]
    al = f"alignas({align}) " if align else ""
    return f"{al}const {ctype} {name}[{len(vals)}] = {{\n" + "\n".join(lines) + "\n};"


def _u32_array(name: str, values, per_line: int = 8, align: int = 8) -> str:
    vals = [f"0x{int(v) & 0xFFFFFFFF:08x}u" for v in np.asarray(values).reshape(-1)]
    lines = ["  " + ", ".join(vals[i:i + per_line]) + "," for i in range(0, len(vals), per_line)]
    return f"alignas({align}) const uint32_t {name}[{len(vals)}] = {{\n" + "\n".join(lines) + "\n};"


def _round_array(name: str, l) -> str:
    vals = (1 << (-l.shifts.astype(np.int64) - 1)) if l.right_shift_only else np.zeros(len(l.shifts), np.int64)
    return c_array("int32_t", name, vals, per_line=8)


def _pairs(name: str, w16: np.ndarray, per_line: int = 8) -> str:
    vals = [f"pair({int(a)}, {int(b)})" for a, b in np.asarray(w16).reshape(-1, 2)]
    lines = ["  " + ", ".join(vals[i:i + per_line]) + "," for i in range(0, len(vals), per_line)]
    return f"alignas(8) const uint32_t {name}[{len(vals)}] = {{\n" + "\n".join(lines) + "\n};"


def _layer_source(l: GemmLayer, args: tuple) -> str:
    in_arg, out_arg = args
    if l.kind == "conv":
        h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
        what = (f"{kh}x{kw} convolution {cin} -> {l.n} channels, {h}x{w} -> {oh}x{ow}, stride {sh},{sw}, "
                f"padding {ph},{pw} (windows of {kh * kw * cin} taps, {l.k} with padding)")
    elif l.kind == "pointwise":
        what = f"1x1 convolution {l.k} -> {l.n} channels over {l.rows} pixels"
    else:
        what = f"fully connected {l.k} -> {l.n}, {l.rows} row(s)"
    pre = f"k{l.name.title().replace('_', '')}"
    out = [f"// ---------------------------------------------------------------------------",
           f"// {l.name}: instruction {l.instruction} ({l.op}), {what}; {l.macs:,} MACs.",
           "namespace {",
           f"// Weights + filter offset as int16 pairs (lo, hi) in the order the loop reads them: "
           f"{l.weight_bytes:,} bytes.",
           _pairs(f"{pre}Weights", l.packed_weights()),
           c_array("int32_t", f"{pre}Init", l.acc_init, per_line=8),
           c_array("int32_t", f"{pre}Mult", l.mults, per_line=8),
           (c_array("int32_t", f"{pre}Shift", -l.shifts.astype(np.int64), per_line=16) if l.right_shift_only
            else c_array("int32_t", f"{pre}Shift", l.shifts, per_line=16)),
           _round_array(f"{pre}Round", l),
           f"const Requant {pre}Requant = {{{pre}Init, {pre}Mult, {pre}Shift, {pre}Round}};",
           "",
           f"bool {l.name}_matches(const KernelContext& ctx) {{",
           "  return " + " &&\n         ".join(l.checks + [f"output_allowed(ctx, {in_arg}, {out_arg}, {str(l.inplace_ok).lower()})"]) + ";",
           "}",
           "}  // namespace",
           "",
           f"void {l.name}_compute({compute_signature(ring_arg(l))[0]}) {{",
           (f"  conv_patches<{', '.join(str(g) for g in l.geometry)}, {l.k}, {l.n}, {l.zero_point}, "
            f"{'kFast' if l.right_shift_only else 'kAny'}, {l.out_offset}, {l.act_min}, {l.act_max}>"
            f"({rows_arg(l)}, out, {pre}Weights, {pre}Requant);" if l.kind == "conv" else
            f"  gemm<{l.rows}, {l.k}, {l.n}, {'kFast' if l.right_shift_only else 'kAny'}, {l.out_offset}, {l.act_min}, {l.act_max}>"
            f"(in, out, {pre}Weights, {pre}Requant);"),
           "}",
           "",
           f"Error {l.name}(const KernelContext& ctx) {{",
           f"  {l.name}_compute(static_cast<const int8_t*>(ctx.decoded_data({in_arg})),",
           f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data({out_arg}))){compute_signature(ring_arg(l))[1]});",
           "  return Error::Ok;",
           "}",
           ""]
    return "\n".join(out)


def _dw_compute(l: DepthwiseLayer, pre: str, mode: str) -> list:
    """The body of a depthwise layer's compute function: per run of output rows of one border
    class, per run of columns of one class, one dw_pixels call (its taps fixed at compile time)."""
    rc, cc, ru, cu = l.classes()
    inplace = l.inplace_ok
    xs, groups = (4, 1) if inplace else (l.c, l.c // 4)
    lines = []
    ind = "  "
    if inplace:  # each group of 4 channels copied out of the input first; its outputs land on its own bytes
        lines += [f"  static_assert({l.oh * l.ow} <= {l.h * l.w}, \"the output has no more pixels than the input\");",
                  f"  alignas(4) int8_t group[{l.h * l.w * 4}];",
                  f"  for (int32_t c = 0; c < {l.c}; c += 4) {{",
                  f"    for (int32_t p = 0; p < {l.h * l.w}; ++p) memcpy(group + 4 * p, in + p * {l.c} + c, 4);",
                  "    const int8_t* src = group;",
                  f"    const uint32_t* w = {pre}Weights + (c / 4) * 18;"]
        ind = "    "
        c0, yoff, soff = "c", " + c", " + c"
    else:
        lines += ["  const int8_t* src = in;", f"  const uint32_t* w = {pre}Weights;"]
        c0, yoff, soff = "0", "", ""
    for oy0, oy1, r in DepthwiseLayer.runs(rc):
        ky0, ky1 = ru[r]
        lines.append(f"{ind}for (int32_t oy = {oy0}; oy < {oy1}; ++oy) {{")
        lines.append(f"{ind}  const int8_t* row = src + (oy * {l.stride} - {l.pad_h}) * {l.w * xs};")
        lines.append(f"{ind}  int8_t* y = out + oy * {l.ow * l.c}{yoff};")
        for ox0, ox1, c in DepthwiseLayer.runs(cc):
            kx0, kx1 = cu[c]
            lines.append(
                f"{ind}  dw_pixels<{ky0}, {ky1}, {kx0}, {kx1}, {l.w}, {xs}, {l.c}, {groups}, {mode}, {l.out_offset}, "
                f"{l.act_min}, {l.act_max}>(row + ({ox0 * l.stride - l.pad_w}) * {xs}, y + {ox0 * l.c}, {ox1 - ox0}, "
                f"{l.stride * xs}, w, {pre}Init + {(r * len(cu) + c) * l.c}{soff}, {pre}Requant, {c0});")
        lines.append(f"{ind}}}")
    if inplace:
        lines.append("  }")
    return lines


def _dw_layer_source(l: DepthwiseLayer) -> str:
    pre = f"k{l.name.title().replace('_', '')}"
    rc, cc, ru, cu = l.classes()
    consts = l.smmlar()
    scale = 2 if consts is not None else 1  # smmlar: doubled weights and starts (requant_smmlar)
    mode = {"smmlar": "kSmmlar", "fast": "kFast", "any": "kAny"}[l.requant_kind]
    if consts is not None:
        rq = [c_array("int32_t", f"{pre}Mult", consts, per_line=9),
              f"const Requant {pre}Requant = {{{pre}Init, {pre}Mult, nullptr, nullptr}};"]
    else:
        rq = [c_array("int32_t", f"{pre}Mult", l.mults, per_line=8),
              (c_array("int32_t", f"{pre}Shift", -l.shifts.astype(np.int64), per_line=16) if l.right_shift_only
               else c_array("int32_t", f"{pre}Shift", l.shifts, per_line=16)),
              _round_array(f"{pre}Round", l),
              f"const Requant {pre}Requant = {{{pre}Init, {pre}Mult, {pre}Shift, {pre}Round}};"]
    out = [f"// ---------------------------------------------------------------------------",
           f"// {l.name}: instruction {l.instruction} ({l.op}), 3x3 depthwise, {l.c} channels, "
           f"{l.h}x{l.w} -> {l.oh}x{l.ow}, stride {l.stride}, padding {l.pad_h},{l.pad_w}; {l.macs:,} MACs.",
           "namespace {",
           f"// Weights{' x 2' if scale == 2 else ''} as int16 pairs (lo, hi) in the order the loop reads them: "
           f"{l.weight_bytes:,} bytes.",
           _pairs(f"{pre}Weights", l.packed_weights().astype(np.int64) * scale),
           f"// Accumulator start{' x 2' if scale == 2 else ''} per border class (taps inside the input: rows {ru}, "
           f"columns {cu}).",
           c_array("int32_t", f"{pre}Init", wrap32(l.init_table().astype(np.int64) * scale), per_line=8),
           ] + rq + [
           "",
           f"bool {l.name}_matches(const KernelContext& ctx) {{",
           "  return " + " &&\n         ".join(l.checks + [f"output_allowed(ctx, 0, 14, {str(l.inplace_ok).lower()})"]) + ";",
           "}",
           "}  // namespace",
           "",
           f"void {l.name}_compute(const int8_t* in, int8_t* out) {{"] + _dw_compute(l, pre, mode) + [
           "}",
           "",
           f"Error {l.name}(const KernelContext& ctx) {{",
           f"  {l.name}_compute(static_cast<const int8_t*>(ctx.decoded_data(0)),",
           f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data(14))));",
           "  return Error::Ok;",
           "}",
           ""]
    return "\n".join(out)


# -- the smmlar GEMM in assembly (Cortex-M33/M4 with the DSP extension) ---------------------------
ACC8 = ["r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"]  # LDM-loadable: ascending


def _clamp_asm(reg: str, act_min: int, act_max: int) -> list:
    out = [f"ssat {reg}, #8, {reg}"]
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


def gemm_asm(name: str, k: int, tail: bool, act_min: int, act_max: int) -> str:
    """void name(const int8_t* x, const GemmDesc* d, int8_t* y, int32_t rows): the smmlar GEMM of
    gemm_stream_c<k, tail, act_min, act_max> for rows >= 1, K fully unrolled. Registers: r4-r11 the 8
    accumulators, r0 x, r1 the stream, r12/lr the activation pairs, r2/r3 a weight pair (during the
    requantization r0/r3/r12 the channel's constants and r2 y). Frame: [sp] x row, [sp+4] y,
    [sp+8] rows left, [sp+12] d, [sp+16] d->end8."""
    body = ["push {r4-r11, lr}", "sub sp, #28", "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]",
            "str r1, [sp, #12]", "ldr r3, [r1, #4]", "str r3, [sp, #16]",
            ".Lrow_%=:", "ldr r1, [sp, #12]", "ldr r1, [r1]", "ldr r3, [sp, #16]", "cmp r1, r3", "beq .Ltail_%=",
            ".Lblock_%=:"]
    body += _block_asm(8, k, act_min, act_max)
    body += ["ldr r3, [sp, #16]", "cmp r1, r3", "bne .Lblock_%=", ".Ltail_%=:"]
    if tail:
        body += _block_asm(4, k, act_min, act_max)
    body += ["ldr r0, [sp]", f"movw r3, #{k}", "add r0, r3", "str r0, [sp]", "ldr r3, [sp, #8]", "subs r3, #1",
             "str r3, [sp, #8]", "bne .Lrow_%=", "add sp, #28", "pop {r4-r11, pc}"]
    body = [l.replace("%=", name) for l in body]
    lines = [f'    ".pushsection .text.{name},\\"ax\\",%progbits\\n"', '    ".syntax unified\\n"', '    ".thumb\\n"',
             '    ".balign 4\\n"', f'    ".global {name}\\n"', f'    ".type {name}, %function\\n"',
             f'    ".thumb_func\\n"', f'    "{name}:\\n"']
    lines += [f'    "{l}\\n"' if l.endswith(":") else f'    "  {l}\\n"' for l in body]
    lines += [f'    ".size {name}, .-{name}\\n"', '    ".popsection\\n"']
    return "__asm__(\n" + "\n".join(lines) + ");"


def _gemm_fn_source(name: str, k: int, tail: bool, act_min: int, act_max: int) -> str:
    return "\n".join([
        f"// The smmlar GEMM for K = {k}{', a last block of 4 channels' if tail else ''}, outputs in [{act_min}, {act_max}].",
        "#if defined(__ARM_FEATURE_DSP)",
        f'extern "C" void {name}(const int8_t* x, const GemmDesc* d, int8_t* y, int32_t rows);',
        gemm_asm(name, k, tail, act_min, act_max),
        "#else",
        f"void {name}(const int8_t* x, const GemmDesc* d, int8_t* y, int32_t rows) {{",
        f"  gemm_stream_c<{k}, {str(tail).lower()}, {act_min}, {act_max}>(x, d, y, rows);",
        "}",
        "#endif",
        ""])


def _gemm_fn_name(l) -> str:
    tail = l.n % 8 == 4
    return f"mcu_gen_gemm_k{l.k}{'_t4' if tail else ''}_{'m' if l.act_min < 0 else ''}{abs(l.act_min)}_{'m' if l.act_max < 0 else ''}{abs(l.act_max)}"


CONV_CHUNK_BYTES = 256  # gathered windows per GEMM call of a generated convolution (stack bytes)


def _smmlar_layer_source(l: GemmLayer, args: tuple) -> str:
    in_arg, out_arg = args
    pre = f"k{l.name.title().replace('_', '')}"
    words, end8 = l.stream()
    fn = _gemm_fn_name(l)
    if l.kind == "conv":
        h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
        what = (f"{kh}x{kw} convolution {cin} -> {l.n} channels, {h}x{w} -> {oh}x{ow}, stride {sh},{sw}, "
                f"padding {ph},{pw} (windows of {kh * kw * cin} taps, {l.k} with padding)")
        chunk = max(1, min(oh * ow, CONV_CHUNK_BYTES // l.k))
        call = (f"  conv_stream<{', '.join(str(g) for g in l.geometry)}, {l.k}, {l.n}, {l.zero_point}, {chunk}>"
                f"({rows_arg(l)}, out, {pre}Desc, &{fn});")
    elif l.kind == "pointwise":
        what = f"1x1 convolution {l.k} -> {l.n} channels over {l.rows} pixels"
        call = (f"  gemm_stream_inplace<{l.rows}, {l.k}, {l.n}>(in, out, {pre}Desc, &{fn});" if l.op != POINTWISE_OPS[0]
                else f"  {fn}(in, &{pre}Desc, out, {l.rows});")
    else:
        what = f"fully connected {l.k} -> {l.n}, {l.rows} row(s)"
        call = f"  {fn}(in, &{pre}Desc, out, {l.rows});"
    out = [f"// ---------------------------------------------------------------------------",
           f"// {l.name}: instruction {l.instruction} ({l.op}), {what}; {l.macs:,} MACs.",
           "namespace {",
           f"// Per block of channels: doubled accumulator starts, doubled int16 weight pairs (weight + filter "
           f"offset) in loop order ({l.weight_bytes:,} bytes), (mult, ra, right) per channel.",
           _u32_array(f"{pre}Stream", words),
           f"const GemmDesc {pre}Desc = {{{pre}Stream, {pre}Stream + {end8}}};",
           "",
           f"bool {l.name}_matches(const KernelContext& ctx) {{",
           "  return " + " &&\n         ".join(l.checks + [f"output_allowed(ctx, {in_arg}, {out_arg}, {str(l.inplace_ok).lower()})"]) + ";",
           "}",
           "}  // namespace",
           "",
           f"void {l.name}_compute({compute_signature(ring_arg(l))[0]}) {{",
           call,
           "}",
           "",
           f"Error {l.name}(const KernelContext& ctx) {{",
           f"  {l.name}_compute(static_cast<const int8_t*>(ctx.decoded_data({in_arg})),",
           f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data({out_arg}))){compute_signature(ring_arg(l))[1]});",
           "  return Error::Ok;",
           "}",
           ""]
    return "\n".join(out)


_IO_ARGS = {"pointwise": (0, 13), "conv": (0, 13), "linear": (0, 11)}



# The elementwise add by tables: kernels_generated/dsp_add.h.
ADD_SOURCE = (KERNELS_GENERATED / "dsp_add.h").read_text(encoding="utf-8")


def _add_layer_source(l: AddLayer, plan) -> str:
    ta, tb, ra, right = plan
    pre = f"k{l.name.title().replace('_', '')}"
    return "\n".join([
        "// ---------------------------------------------------------------------------",
        f"// {l.name}: instruction {l.instruction} ({l.op}), add of {l.numel} elements; exact on all 65,536 input pairs.",
        "namespace {",
        "// 2 * requantize((x - zp) << 20, mult, shift) per int8 bit pattern x, of each operand.",
        c_array("int32_t", f"{pre}TableA", ta, per_line=8, align=4),
        c_array("int32_t", f"{pre}TableB", tb, per_line=8, align=4),
        "",
        f"bool {l.name}_matches(const KernelContext& ctx) {{",
        "  return " + " &&\n         ".join(l.checks + ["output_allowed(ctx, 0, 13, true)", "output_allowed(ctx, 4, 13, true)"])
        + ";",
        "}",
        "}  // namespace",
        "",
        f"void {l.name}_compute(const int8_t* a, const int8_t* b, int8_t* y) {{",
        f"  add_tables<{l.numel}, {l.act_min}, {l.act_max}>(a, b, y, {pre}TableA, {pre}TableB, "
        f"static_cast<int32_t>({l.out_mult}), static_cast<int32_t>({ra}), {right});",
        "}",
        "",
        f"Error {l.name}(const KernelContext& ctx) {{",
        f"  {l.name}_compute(static_cast<const int8_t*>(ctx.decoded_data(0)), static_cast<const int8_t*>(ctx.decoded_data(4)),",
        "                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data(13))));",
        "  return Error::Ok;",
        "}",
        ""])


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
    by_op = {k.op: k for k in kernels}
    parts = [PRELUDE, ROWS_SOURCE]
    fns = {}
    for l in layers:
        if l.kind not in ("depthwise3x3", "add") and l.requant_kind == "smmlar":
            fns.setdefault(_gemm_fn_name(l), (l.k, l.n % 8 == 4, l.act_min, l.act_max))
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
            parts.append(_smmlar_layer_source(l, _IO_ARGS[l.kind]))
        else:
            parts.append(_layer_source(l, _IO_ARGS[l.kind]))
    parts.append("}  // namespace generated\n\nnamespace kernels {")
    parts += prepare_hooks_source(layers, by_op, g)
    g.source = bind_at_load("\n".join(parts), layers)
    return g
