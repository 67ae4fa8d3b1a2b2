"""mcu-gen's own int8 kernels for the Cortex-M55 (MVE / Helium), generated per layer (issue 17).

The MVE counterpart of mcu_gen/backends/generated/ (which writes the DSP kernels of the
Cortex-M33/M4). The layers are found by generated/match.py's matchers (same operators, same
conditions, same load-time checks), then written for MVE instead:

* 1x1 convolutions and fully connected layers: a register-blocked GEMM of 2 rows x 4 output
  channels whose inner loop is inline assembly — per 16 inputs 2 activation loads
  (``VLDRB.8``), 4 weight loads and 8 ``VMLADAVA.S8`` (16 MACs each, into 8 scalar
  accumulators): 14 instructions per 128 MACs, K fully unrolled. The weights are int8, reordered
  ahead of time into the order the loop reads them (per block of 4 output channels, per 16
  inputs, per channel 16 bytes; zero padded to whole blocks), so they cost 1x the covered
  weights in flash (the DSP kernels' pre-widened copy costs 2x). Row counts that are odd end
  with a 1x4 block, K not a multiple of 16 ends with a tail-predicated chunk (``VCTP.8``), N not
  a multiple of 4 with a predicated store.
* other convolutions (groups 1): the windows of two output pixels are gathered into a buffer
  (im2col; taps outside the input = the input zero point, the buffer zero padded to 16 bytes),
  then the same GEMM block runs over them.
* 3x3 depthwise: MVE across channels, 4 channels per vector (``VLDRB.S32`` of activations and
  weights, ``VMUL``, ``VADD``), padding folded into a per-border-class accumulator start as in
  the DSP kernel.
* elementwise adds (``cortex_m::quantized_add``, equal shapes): a tail-predicated loop of 4 lanes
  whose requantization sequence is proven exact per layer on every int8 pair (section at the end).
* requantization vectorized, 4 channels at a time (as CMSIS-NN's arm_requantize_s32x4):
  ``VQRDMULH`` and a rounding right shift (``VRSHL`` after a fix-up of negative values, so that
  ties round away from zero as arm_nn_requantize does). Modes per layer: ``fast`` (every shift a
  right shift of 1..31), ``vector`` (left shifts too: ``VSHL`` first, allowed only where the
  generator proved that the shifted accumulator fits 32 bits, as the reference shifts in 64) and
  ``scalar`` (otherwise: the library's requantize_to_int8 per value). All three are bit-exact
  with mcu_gen/reference/integer.py.

The runtime reaches them exactly as the DSP kernels: a prepare hook per operator that matches
the instruction (shapes, integer arguments, CRC-32 of each constant) and falls back to the
library kernel (CMSIS-NN or portable) otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcu_gen.backends.generated import emit_dsp, exactness, hooks, match
from mcu_gen.backends.generated import layers as dsp_layers
from mcu_gen.program.ir import Program
from mcu_gen.quantize.arith import SHIFT_INT8, requantize
from mcu_gen.paths import KERNELS_GENERATED

GENERATED_FILE = dsp_layers.GENERATED_FILE
GENERATED_OPS = dsp_layers.GENERATED_OPS
CHECKS_MARKER = "// Load-time checks"


def board_supports(board) -> bool:
    """MVE generated kernels: cores with the M-profile Vector Extension (Cortex-M55)."""
    return bool(getattr(board, "mve", False))


# -- layers ---------------------------------------------------------------------------------------
def _right_left(shifts):
    s = np.asarray(shifts, np.int64)
    return np.maximum(-s, 0), np.maximum(s, 0)


def requant_mode(mults, shifts, acc_bound) -> str:
    """'fast' (every shift a right shift of 1..31), 'vector' (VSHL first: the left-shifted
    accumulator provably fits 32 bits), else 'scalar' (requantize_to_int8 per value)."""
    m = np.asarray(mults, np.int64)
    s = np.asarray(shifts, np.int64)
    right, left = _right_left(s)
    if m.min() <= -2**31 or s.min() < -31 or s.max() > 31:
        return "scalar"
    if left.max() == 0 and right.min() >= 1:
        return "fast"
    bound = np.asarray(acc_bound, np.int64)
    ok = (left == 0) | ((np.minimum(bound, 2**31) << left) < 2**31)
    return "vector" if bool(np.all(ok)) else "scalar"


RING_STACK_BYTES = 2048  # stack for a depthwise layer's ring of input rows (when no scratch tensor holds it)


def ring_plan(l) -> tuple | None:
    """(channels per pass kG, ring in the scratch tensor?) of a depthwise layer: the ring of three
    padded rows takes 3 * (W + 2 * pad) * kG bytes. In place, the variant's scratch (H * W bytes,
    planned in the arena) holds it where it fits; else the stack, at most RING_STACK_BYTES.
    The largest kG (a multiple of 4 dividing C) that fits; None if not even 4 channels fit."""
    row = l.w + 2 * l.pad_w
    groups = [g for g in range(l.c, 3, -1) if l.c % g == 0 and g % 4 == 0]
    if l.inplace_ok and l.scratch_bytes:
        for g in groups:
            if 3 * row * g <= l.scratch_bytes:
                return g, True
    for g in groups:
        if 3 * row * g <= RING_STACK_BYTES:
            return g, False
    return None


@dataclass
class MveLayer:
    """One generated MVE layer around the DSP matcher's layer object ``src``."""
    src: object
    mode: str
    ring: tuple | None = None  # depthwise: ring_plan()

    def __getattr__(self, name):  # everything else: the matched layer's (name, kind, shapes, checks, ...)
        if name == "src":
            raise AttributeError(name)
        return getattr(self.src, name)

    @property
    def right_shift_only(self):
        return self.mode == "fast"

    @property
    def weight_bytes(self) -> int:
        """Flash of the reordered int8 weight copy (the program keeps its own weights too)."""
        return int(self.packed_weights().size)

    @property
    def nk(self) -> int:
        return (self.src.k + 15) // 16 if self.kind != "depthwise3x3" else 0

    def packed_weights(self) -> np.ndarray:
        if self.kind == "depthwise3x3":  # per group of 4 channels, per tap, the group's 4 weights
            c = self.src.c
            w = self.src.weights.astype(np.int8).reshape(9, c // 4, 4).transpose(1, 0, 2)
            return np.ascontiguousarray(w).reshape(-1)
        return pack_gemm_weights(self.src.weights)

    def depthwise_init(self) -> np.ndarray:
        """bias + input_offset * (sum of the 9 weights) per channel: every tap counts, the taps
        outside the input read the zero point (x + input_offset = 0)."""
        s = self.src
        return exactness.wrap32(s.bias + s.in_offset * s.weights.astype(np.int64).sum(axis=0))


def pack_gemm_weights(w: np.ndarray) -> np.ndarray:
    """int8 [n, k] -> the GEMM's read order: per block of 4 output channels (zero channels pad
    the last block), per chunk of 16 inputs (zero inputs pad the last chunk), per channel of the
    block its 16 weights."""
    n, k = w.shape
    n4, nk = (n + 3) // 4, (k + 15) // 16
    p = np.zeros((n4 * 4, nk * 16), np.int8)
    p[:n, :k] = w
    return np.ascontiguousarray(p.reshape(n4, 4, nk, 16).transpose(0, 2, 1, 3)).reshape(-1)


@dataclass
class Generated(dsp_layers.Generated):
    def report(self) -> dict:
        r = super().report()
        for row, l in zip(r["layers"], self.layers):
            row["requant"] = l.mode
            row["reordered_weight_bytes"] = row.pop("prewidened_weight_bytes")
            row["isa"] = "mve"
        r["reordered_weight_bytes"] = r.pop("prewidened_weight_bytes")
        r["prewidened_weight_bytes"] = 0
        r["isa"] = "mve"
        return r


def covers(program: Program, idx: int, op: str) -> bool:
    """Whether the generator takes instruction ``idx`` if it were operator ``op`` (same arguments)."""
    return match.covers(program, idx, op, isa="mve")


def eligible(program: Program):
    """(layers, skipped): an MveLayer for each layer generated/match.py's matchers accept whose weights
    are int8 (a fully connected layer with a filter offset has int16 weights: skipped)."""
    layers, skipped = [], []
    base, skipped0 = match.eligible(program, isa="mve")
    skipped += skipped0
    for l in base:
        if l.kind == "add":  # its own section below
            r = add_layer(l)
            if isinstance(r, str):
                skipped.append((l.instruction, l.op, r))
            else:
                layers.append(r)
            continue
        w = np.asarray(l.weights, np.int64)
        if w.min() < -128 or w.max() > 127:
            skipped.append((l.instruction, l.op, "weights + filter offset outside int8"))
            continue
        if l.kind == "depthwise3x3" and not -128 <= -l.in_offset <= 127:
            skipped.append((l.instruction, l.op, "input zero point outside int8 (padding reads it)"))
            continue
        ring = ring_plan(l) if l.kind == "depthwise3x3" else None
        if l.kind == "depthwise3x3" and ring is None:
            skipped.append((l.instruction, l.op, f"a ring of 3 input rows of 4 channels takes "
                            f"{12 * (l.w + 2 * l.pad_w)} bytes (> {RING_STACK_BYTES} of stack)"))
            continue
        layers.append(MveLayer(src=l, mode=requant_mode(l.mults, l.shifts, l.acc_bound()), ring=ring))
    layers.sort(key=lambda l: l.instruction)
    return layers, skipped


# -- C++ ------------------------------------------------------------------------------------------
# The static C++ every generated MVE file starts with: kernels_generated/mve_prelude.h.
PRELUDE = (KERNELS_GENERATED / "mve_prelude.h").read_text(encoding="utf-8")


def _mac_struct(nk: int, tail: int) -> str:
    """The inline-assembly MAC blocks of a K of nk chunks of 16 (the last one `tail` bytes, 0 =
    whole): 2 rows x 4 channels (8 accumulators, which VMLADAVA needs in even registers: "Te")
    and 1 row x 4 channels. The first chunk starts the accumulators (VMLADAV), the others add.
    A partial last chunk loads the activations predicated (VCTP.8, zeros past K); the weights are
    zero padded."""
    def body(rows: int) -> list:
        xs = ["x0", "x1"][:rows]
        lines = []
        for j in range(nk):
            op = "vmladav.s8" if j == 0 else "vmladava.s8"
            last = j == nk - 1
            if last and tail:
                lines.append("vctp.8 %[t]")
                lines.append("vpst" + "t" * (rows - 1))
                lines += [f"vldrbt.8 %q[{q}], [%[{x}]]" for q, x in zip("pq", xs)]
            else:
                lines += [f"vldrb.8 %q[{q}], [%[{x}]], #16" for q, x in zip("pq", xs)]
            for c in range(4):
                wq = "u" if c % 2 == 0 else "v"
                lines.append(f"vldrb.8 %q[{wq}], [%[w]], #16")
                lines.append(f"{op} %[a{c}], %q[p], %q[{wq}]")
                if rows == 2:
                    lines.append(f"{op} %[b{c}], %q[q], %q[{wq}]")
        return lines

    def asm(rows: int) -> str:
        text = "\n".join(f'      "{ln}\\n\\t"' for ln in body(rows))
        accs = [f'[a{c}] "=&Te"(a{c})' for c in range(4)] + ([f'[b{c}] "=&Te"(b{c})' for c in range(4)] if rows == 2 else [])
        vecs = ['[p] "=&w"(p)', '[u] "=&w"(u)', '[v] "=&w"(v)'] + (['[q] "=&w"(q)'] if rows == 2 else [])
        ptrs = ['[x0] "+r"(x0)'] + (['[x1] "+r"(x1)'] if rows == 2 else []) + ['[w] "+r"(w)']
        ins = '[t] "r"(kTail)' if tail else ""
        decl = "int8x16_t p, u, v" + (", q" if rows == 2 else "") + ";"
        # A tail chunk writes the predicate register (VCTP): "p0" (GCC's name for VPR) is clobbered, else
        # GCC keeps a predicate of its own there across the block (or, with -fipa-ra, across a call
        # to a function holding it: the in-place GEMM's copy of the second row was lost so).
        clobbers = '"memory", "p0"' if tail else '"memory"'
        return (f"    {decl}\n    __asm__ volatile(\n{text}\n"
                f"      : {', '.join(ptrs + accs + vecs)}\n      : {ins}\n      : {clobbers});")

    return "\n".join([
        f"// K = {nk} chunks of 16" + (f", the last {tail} bytes" if tail else "") + ": per chunk 2 (1) VLDRB of activations, "
        "4 of weights and 8 (4) VMLADAVA.S8.",
        f"struct Mac{nk}_{tail} {{",
        f"  static constexpr uint32_t kTail = {tail};",
        "  static MCU_MVE_INLINE void two(const int8_t* x0, const int8_t* x1, const int8_t*& w, int32_t& a0, int32_t& a1,",
        "                                int32_t& a2, int32_t& a3, int32_t& b0, int32_t& b1, int32_t& b2, int32_t& b3) {",
        asm(2),
        "  }",
        "  static MCU_MVE_INLINE void one(const int8_t* x0, const int8_t*& w, int32_t& a0, int32_t& a1, int32_t& a2,",
        "                                int32_t& a3) {",
        asm(1),
        "  }",
        "};",
        ""])


def _dw_struct(xs: int) -> str:
    """The 9 taps of one group of 4 channels of a depthwise 3x3 from three ring rows, `xs` bytes
    between pixels: per tap VLDRB.S32 of 4 activations (a widening load: low registers only, "l";
    the row pointer advanced by xs; an ADD where xs > 127, beyond the post-increment's reach),
    VLDRB.S32 of 4 weights, VMUL.I32, VADD.I32."""
    lines = []
    for ky in range(3):
        for kx in range(3):
            if xs <= 127:
                lines.append(f"vldrb.s32 %q[a], [%[r{ky}]], #{xs}")
            else:
                lines.append(f"vldrb.s32 %q[a], [%[r{ky}]]")
                if kx < 2:
                    lines.append(f"add %[r{ky}], %[r{ky}], #{xs}")
            lines += ["vldrb.s32 %q[b], [%[w]], #4", "vmul.i32 %q[a], %q[a], %q[b]", "vadd.i32 %q[acc], %q[acc], %q[a]"]
    text = "\n".join(f'        "{ln}\\n\\t"' for ln in lines)
    return "\n".join([
        f"struct Dw{xs} {{",
        "  static MCU_MVE_INLINE void taps(const int8_t* r0, const int8_t* r1, const int8_t* r2, const int8_t*& w,",
        "                                  int32x4_t& acc) {",
        "    int32x4_t a, b;",
        "    __asm__ volatile(",
        text,
        '        : [r0] "+l"(r0), [r1] "+l"(r1), [r2] "+l"(r2), [w] "+l"(w), [acc] "+w"(acc), [a] "=&w"(a), [b] "=&w"(b)',
        "        :",
        '        : "memory");',
        "  }",
        "};",
        ""])


def _pad4(values, fill=0) -> np.ndarray:
    v = np.asarray(values, np.int64).reshape(-1)
    n4 = (v.size + 3) // 4 * 4
    return np.concatenate([v, np.full(n4 - v.size, fill, np.int64)])


def _requant_arrays(pre: str, l: MveLayer, init) -> list:
    s = l.src
    shifts = np.asarray(s.shifts, np.int64)
    right, left = _right_left(shifts)
    a = emit_dsp.c_array
    rows = [a("int32_t", f"{pre}Init", _pad4(init), per_line=8, align=16),
            a("int32_t", f"{pre}Mult", _pad4(s.mults), per_line=8, align=16)]
    if l.mode == "scalar":
        rows.append(a("int32_t", f"{pre}Left", _pad4(shifts), per_line=16, align=16))
    else:
        rows.append(a("int32_t", f"{pre}Left", _pad4(left), per_line=16, align=16))
    rows.append(a("int32_t", f"{pre}Right", _pad4(-right), per_line=16, align=16))
    rows.append(a("int32_t", f"{pre}Mask", _pad4(np.where(right > 0, -1, 0)), per_line=16, align=16))
    rows.append(f"const Requant {pre}Requant = {{{pre}Init, {pre}Mult, {pre}Left, {pre}Right, {pre}Mask}};")
    return rows


_MODE = {"fast": 0, "vector": 1, "scalar": 2}
_IO_ARGS = {"pointwise": (0, 13), "conv": (0, 13), "linear": (0, 11), "depthwise3x3": (0, 14)}


def _layer_source(l: MveLayer) -> tuple:
    """(C++ of one layer, name of the inline-assembly struct it uses: MacN_T or DwX)."""
    s = l.src
    pre = f"k{s.name.title().replace('_', '')}"
    in_arg, out_arg = _IO_ARGS[s.kind]
    mode = _MODE[l.mode]
    ring, extra_checks = None, []  # the argument holding the layer's ring of rows (emit_dsp.compute_signature)
    consts = f"{mode}, {s.out_offset}, {s.act_min}, {s.act_max}"
    if s.kind == "depthwise3x3":
        what = (f"3x3 depthwise, {s.c} channels, {s.h}x{s.w} -> {s.oh}x{s.ow}, stride {s.stride}, "
                f"padding {s.pad_h},{s.pad_w}")
        arrays = [f"// int8 weights per group of 4 channels, per tap: {l.weight_bytes:,} bytes.",
                  emit_dsp.c_array("int8_t", f"{pre}Weights", l.packed_weights(), per_line=32, align=16)]
        rq = _requant_arrays(pre, l, l.depthwise_init())
        g, in_scratch = l.ring
        ring_bytes = 3 * (s.w + 2 * s.pad_w) * g
        what += (f"; rows of {g} channels through a ring of {ring_bytes} bytes in "
                 + ("the scratch tensor" if in_scratch else "the stack"))
        ring_decl = [] if in_scratch else [f"  alignas(16) int8_t ring[{ring_bytes}];"]
        call = "\n".join(ring_decl + [
            f"  depthwise3x3<Dw{g}, {s.h}, {s.w}, {s.c}, {g}, {s.oh}, {s.ow}, {s.stride}, {s.pad_h}, {s.pad_w}, "
            f"{-s.in_offset}, {consts}>(in, out, ring, {pre}Weights, {pre}Requant);"])
        if in_scratch:  # the ring: the scratch tensor (argument 13), apart from the input and output
            ring, extra_checks = 13, ["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"]
        helper = f"Dw{g}"  # the inline-assembly struct this layer needs
    else:
        mac = f"Mac{l.nk}_{s.k % 16}"
        arrays = [f"// int8 weights in the order the loop reads them: {l.weight_bytes:,} bytes.",
                  emit_dsp.c_array("int8_t", f"{pre}Weights", l.packed_weights(), per_line=32, align=16)]
        rq = _requant_arrays(pre, l, s.acc_init)
        if s.kind == "conv":
            h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = s.geometry
            kp = l.nk * 16
            what = (f"{kh}x{kw} convolution {cin} -> {s.n} channels, {h}x{w} -> {oh}x{ow}, stride {sh},{sw}, "
                    f"padding {ph},{pw} (windows of {kh * kw * cin} taps, {kp} bytes gathered)")
            call = (f"  conv_patches<Mac{l.nk}_0, {', '.join(str(g) for g in s.geometry)}, {kp}, {s.n}, "
                    f"{s.zero_point}, {consts}>({emit_dsp.rows_arg(s)}, out, {pre}Weights, {pre}Requant);")
            ring = emit_dsp.ring_arg(s)  # in place: the ring of saved rows is the scratch tensor
            mac = f"Mac{l.nk}_0"  # the windows are zero padded: no tail predication
        else:
            what = (f"1x1 convolution {s.k} -> {s.n} channels over {s.rows} pixels" if s.kind == "pointwise"
                    else f"fully connected {s.k} -> {s.n}, {s.rows} row(s)")
            call = (f"  gemm<{mac}, {s.rows}, {s.k}, {s.n}, {str(s.inplace_ok).lower()}, {consts}>"
                    f"(in, out, {pre}Weights, {pre}Requant);")
        helper = mac
    out = ["// ---------------------------------------------------------------------------",
           f"// {s.name}: instruction {s.instruction} ({s.op}), {what}; {s.macs:,} MACs; requantization: {l.mode}.",
           "namespace {", *arrays, *rq, "",
           f"bool {s.name}_matches(const KernelContext& ctx) {{",
           "  return " + " &&\n         ".join(
               s.checks + extra_checks + [f"output_allowed(ctx, {in_arg}, {out_arg}, {str(s.inplace_ok).lower()})"]) + ";",
           "}",
           "}  // namespace",
           "",
           f"void {s.name}_compute({emit_dsp.compute_signature(ring)[0]}) {{",
           call,
           "}",
           "",
           f"Error {s.name}(const KernelContext& ctx) {{",
           f"  {s.name}_compute(static_cast<const int8_t*>(ctx.decoded_data({in_arg})),",
           f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data({out_arg}))){emit_dsp.compute_signature(ring)[1]});",
           "  return Error::Ok;",
           "}",
           ""]
    return "\n".join(out), helper


def _checks_source() -> str:
    """The load-time checks (tensor_is, constant_is, ..., output_allowed) of generated/emit_dsp.py's
    prelude, shared so that both generators match instructions the same way."""
    i = emit_dsp.PRELUDE.index(CHECKS_MARKER)
    return "// " + "-" * 75 + "\n" + emit_dsp.PRELUDE[i:]


def generate(program: Program, kernels) -> Generated:
    """The generated MVE layers of this program and the C++ file that holds them. ``kernels``: the
    selected library kernels (their fn/prepare are the fallback of each generated prepare)."""
    layers, skipped = eligible(program)
    g = Generated(layers=layers, skipped=skipped)
    if not layers:
        return g
    by_op = {k.op: k for k in kernels}
    bodies, macs = [], {}
    for l in layers:
        if l.kind == "add":  # its own section below
            bodies.append(_add_layer_source(l))
            continue
        text, helper = _layer_source(l)
        bodies.append(text)
        if helper.startswith("Dw"):
            macs[helper] = _dw_struct(int(helper[2:]))
        else:
            nk, tail = (int(v) for v in helper[3:].split("_"))
            macs[helper] = _mac_struct(nk, tail)
    parts = [PRELUDE, emit_dsp.ROWS_SOURCE, *macs.values(), _checks_source(), *bodies, "}  // namespace generated\n\nnamespace kernels {"]
    parts += hooks.prepare_hooks_source(layers, by_op, g)
    g.source = hooks.bind_at_load("\n".join(parts), layers)
    return g


hooked_kernels = hooks.hooked_kernels


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


_w32 = exactness.wrap_i32  # int64 values wrapped to int32 (two's complement, as the vector lanes hold them)


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
# immediates #31 / #r; _requant_asm prints the steps, _requant_emulated runs them with _STEP_SEMANTICS.
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
    "vadd.i32": lambda d, a, b: _w32(np.asarray(a, np.int64) + b),
}


def _requant_emulated(v, m: int, r: int, variant: str):
    """REQUANT_SEQUENCES[variant] run in numpy on the int32 lanes v (multiplier m, right shift r)."""
    regs = {"x": np.asarray(v, np.int64), "t": None, "m": int(m), "#31": 31, "#r": r}
    for mnemonic, dst, src, operand in REQUANT_SEQUENCES[variant]:
        regs[dst] = _STEP_SEMANTICS[mnemonic](regs[dst], regs[src], regs[operand])
    return regs["x"]


def _requant_asm(x: str, t: str, m: str, r: int, variant: str) -> list:
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
        got = _requant_emulated(v, mult, -shift, variant)
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
    s = _w32(pa[2][:, None] + pb[2][None, :])  # VADD
    left = max(l.out_shift, 0)
    if left:
        s = _w32(s << left)  # VSHL #left
    for variant in _variants(l.out_shift):
        r = _w32(_requant_emulated(s, l.out_mult, -l.out_shift, variant) + l.out_zp)
        for clamp_min, clamp_max in ((False, False), (True, False), (False, True), (True, True)):
            o = np.maximum(r, l.act_min) if clamp_min else r
            o = np.minimum(o, l.act_max) if clamp_max else o
            if np.array_equal(((o + 128) & 0xFF) - 128, want):  # VSTRB.32 keeps the low byte
                return AddPlan(pa[0], pb[0], pa[1], pb[1], left, variant, clamp_min, clamp_max, l.out_zp != 0)
    return "no exact vector form of the output requantization"


@dataclass
class MveAdd(MveLayer):
    """A generated MVE add layer (AddLayer ``src``) and its proven vector sequence."""
    plan: AddPlan = None

    @property
    def weight_bytes(self) -> int:
        return 0

    @property
    def nk(self) -> int:
        return 0


def add_layer(l) -> "MveAdd | str":
    plan = add_plan(l)
    return plan if isinstance(plan, str) else MveAdd(src=l, mode="vector", plan=plan)


def _add_asm(l: MveAdd) -> list:
    """The loop body: pointers a, b, y; q registers qa, qb, qt (temporaries), ka, kb (scales), lo, hi."""
    p, s = l.plan, l.src
    lines = ["vldrb.s32 %q[qa], [%[a]], #4", "vldrb.s32 %q[qb], [%[b]], #4", "vmlas.u32 %q[qa], %q[ka], %[ca]"]
    lines += _requant_asm("%q[qa]", "%q[qt]", "%[ma]", -s.a_shift, p.variant_a)
    lines.append("vmlas.u32 %q[qb], %q[kb], %[cb]")
    lines += _requant_asm("%q[qb]", "%q[qt]", "%[mb]", -s.b_shift, p.variant_b)
    lines.append("vadd.i32 %q[qa], %q[qa], %q[qb]")
    if p.out_left:
        lines.append(f"vshl.i32 %q[qa], %q[qa], #{p.out_left}")
    lines += _requant_asm("%q[qa]", "%q[qt]", "%[mo]", -s.out_shift, p.variant_out)
    if p.add_zp:
        lines.append("vadd.i32 %q[qa], %q[qa], %[zo]")
    if p.clamp_min:
        lines.append("vmax.s32 %q[qa], %q[qa], %q[lo]")
    if p.clamp_max:
        lines.append("vmin.s32 %q[qa], %q[qa], %q[hi]")
    lines.append("vstrb.32 %q[qa], [%[y]], #4")
    return lines


def _add_layer_source(l: MveAdd) -> str:
    s, p = l.src, l.plan
    body = ["dlstp.32 lr, %[n]", "1:", *_add_asm(l), "letp lr, 1b"]
    text = "\n".join(f'      "{ln}\\n\\t"' for ln in body)
    c = lambda v: f"static_cast<int32_t>({int(_w32(v))})"  # noqa: E731
    return "\n".join([
        "// ---------------------------------------------------------------------------",
        f"// {s.name}: instruction {s.instruction} ({s.op}), add of {s.numel} elements; per 4 elements "
        f"{p.instructions_per_vector} instructions ({p.describe()}), exact on all 65,536 input pairs.",
        "namespace {",
        f"bool {s.name}_matches(const KernelContext& ctx) {{",
        "  return " + " &&\n         ".join(s.checks + ["output_allowed(ctx, 0, 13, true)", "output_allowed(ctx, 4, 13, true)"])
        + ";",
        "}",
        "}  // namespace",
        "",
        f"void {s.name}_compute(const int8_t* a, const int8_t* b, int8_t* y) {{",
        f"  const int32x4_t ka = vdupq_n_s32({c(p.scale_a)}), kb = vdupq_n_s32({c(p.scale_b)});",
        f"  const int32x4_t lo = vdupq_n_s32({s.act_min}), hi = vdupq_n_s32({s.act_max});",
        f"  const int32_t ca = {c(-s.a_zp * p.scale_a)}, cb = {c(-s.b_zp * p.scale_b)};",
        f"  const int32_t ma = {c(s.a_mult)}, mb = {c(s.b_mult)}, mo = {c(s.out_mult)}, zo = {s.out_zp};",
        f"  const int32_t n = {s.numel};",
        "  int32x4_t qa, qb, qt;",
        "  __asm__ volatile(",
        text,
        '      : [a] "+l"(a), [b] "+l"(b), [y] "+l"(y), [qa] "=&w"(qa), [qb] "=&w"(qb), [qt] "=&w"(qt)',
        '      : [n] "r"(n), [ka] "w"(ka), [kb] "w"(kb), [lo] "w"(lo), [hi] "w"(hi), [ca] "r"(ca), [cb] "r"(cb), [ma] "r"(ma),',
        '        [mb] "r"(mb), [mo] "r"(mo), [zo] "r"(zo)',
        '      : "lr", "memory");',
        "}",
        "",
        f"Error {s.name}(const KernelContext& ctx) {{",
        f"  {s.name}_compute(static_cast<const int8_t*>(ctx.decoded_data(0)), static_cast<const int8_t*>(ctx.decoded_data(4)),",
        f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data(13))));",
        "  return Error::Ok;",
        "}",
        ""])
