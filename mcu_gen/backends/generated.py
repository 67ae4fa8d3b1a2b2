"""mcu-gen's own int8 kernels, generated per layer at build time (issue 17).

At build time every shape, offset and requantization constant of a layer is known. For the
layers where it pays, this module writes one C++ function per instruction into the firmware
project (``src/generated_kernels.cpp``): a register-blocked GEMM with the layer's sizes as
compile-time constants, reading weights that were reordered and pre-widened to int16 pairs
ahead of time, in exactly the order its inner loop reads them, so that the loop is loads,
``SXTB16`` on the activations and ``SMLAD`` (two 16-bit MACs per instruction) only.

Covered now: 1x1 convolutions (stride 1, no padding, groups 1; ``cortex_m::quantized_conv2d``
and its in-place variant ``mcu::quantized_conv2d_pointwise_inplace``) and fully connected
layers (``cortex_m::quantized_linear``) with input and output channel counts divisible by 4,
on cores with the DSP extension and without MVE (Cortex-M33, M4); elementwise adds
(``cortex_m::quantized_add`` of equal shapes, AddLayer): tables of both operands and the GEMM's
one-rounding requantization (add_dsp_plan).

How the runtime reaches them: through the kernel table's prepare hook (``PrepareFn``,
docs/architecture.md). The operator keeps its library kernel (portable or CMSIS-NN); its
table entry gets a generated prepare function that, once per instruction at load, compares
the instruction with each generated layer — tensor shapes and dim orders, every integer
argument, and a CRC-32 of each constant tensor it was generated from (weights, bias,
multipliers, shifts) — and returns that layer's function only on a full match. Anything
else (another program uploaded later, a changed weight) runs the library kernel. So the
runtime is unchanged, and a build without generated kernels is byte-for-byte what it was.

Arithmetic (identical to the host integer reference, mcu_gen/reference/integer.py):
``acc = init[n] + sum_k x[k] * w'[n][k]`` in wrapping int32, with ``w' = w + filter_offset``
(int16) and ``init`` folding bias, kernel sum and ``input_offset * sum_k w'`` (int32
arithmetic is modular, so the folded sum equals the reference's), then the portable
kernels' ``requantize_to_int8`` (int8_common.h: CMSIS-NN's arm_nn_requantize).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from mcu_gen.program.ir import Program, ScalarValue, TensorValue
from mcu_gen.quantize.arith import SHIFT_INT8, quantized_add, requantize
from mcu_gen.paths import KERNELS_GENERATED

GENERATED_FILE = "generated_kernels.cpp"
MODES = ("auto", "library", "generated")

# Operators with a generated form, and what they compute.
POINTWISE_OPS = ("cortex_m::quantized_conv2d.out", "mcu::quantized_conv2d_pointwise_inplace.out",
                 "mcu::quantized_conv2d_rows_inplace.out")
CONV_ROWS_INPLACE = POINTWISE_OPS[2]  # a k x k convolution written row by row over its input
LINEAR_OPS = ("cortex_m::quantized_linear.out",)
DEPTHWISE_OPS = ("cortex_m::quantized_depthwise_conv2d.out", "mcu::quantized_depthwise_conv2d_inplace.out")
INPLACE_GROUP_BYTES = 4096  # stack for one channel group of an in-place depthwise input (H * W * 4)
ADD_OPS = ("cortex_m::quantized_add.out",)
GENERATED_OPS = POINTWISE_OPS + LINEAR_OPS + DEPTHWISE_OPS + ADD_OPS
MAX_K = 14563  # as the portable kernels: |sum| of K products of (int8 + 256) * (int16) stays in int32


def board_supports(board) -> bool:
    """The kernels of this module are written for the DSP extension (SMLAD/SXTB16) of cores without
    MVE (Cortex-M33, M4); MVE cores (M55) get generated_mve.py's kernels instead."""
    return bool(getattr(board, "dsp", False)) and not bool(getattr(board, "mve", False))


class _RequantChoice:
    """Which requantization a layer's generated code takes, from its multipliers, shifts, output
    offset and the largest accumulator it can produce (``acc_bound()``, each layer's own)."""

    @property
    def right_shift_only(self) -> bool:
        return fast_requant(self.mults, self.shifts, self.acc_bound())

    def smmlar(self):
        """smmlar_consts for this layer (None: the requant_fast / requant_any path)."""
        return smmlar_consts(self.mults, self.shifts, self.acc_bound(), self.out_offset)

    @property
    def requant_kind(self) -> str:
        return "smmlar" if self.smmlar() is not None else ("fast" if self.right_shift_only else "any")


@dataclass
class GemmLayer(_RequantChoice):
    """One generated layer: out[r][n] = requant(init[n] + sum_k in[r][k] * w[n][k]) for r < rows."""
    name: str
    instruction: int
    op: str
    kind: str  # "pointwise" | "linear"
    rows: int
    k: int
    n: int
    weights: np.ndarray  # int16 [n, k]: weight + filter_offset
    acc_init: np.ndarray  # int32 [n]
    mults: np.ndarray  # int32 [n]
    shifts: np.ndarray  # int32 [n]
    out_offset: int
    act_min: int
    act_max: int
    inplace_ok: bool  # output may start at the input's address (Cout <= Cin)
    checks: list = field(default_factory=list)  # C++ boolean expressions over ctx, all must hold

    @property
    def macs(self) -> int:
        return self.rows * self.k * self.n

    @property
    def weight_bytes(self) -> int:
        """Flash of the pre-widened weight copy (the program keeps its int8 weights too)."""
        return 2 * self.n * self.k

    def packed_weights(self) -> np.ndarray:
        """int16 weights in inner-loop order: for each block of 8 output channels (a last block of
        4 when n % 8 == 4), for each group of 4 inputs k..k+3, for each channel of the block:
        w[k], w[k+2], w[k+1], w[k+3] — the two int16 pairs that SMLAD multiplies with SXTB16(x)
        and SXTB16(x ror 8)."""
        blocks, n0 = [], 0
        while n0 < self.n:
            b = 8 if n0 + 8 <= self.n else 4
            w = self.weights[n0:n0 + b].reshape(b, self.k // 4, 4).transpose(1, 0, 2)[..., [0, 2, 1, 3]]
            blocks.append(np.ascontiguousarray(w).reshape(-1))
            n0 += b
        return np.concatenate(blocks).astype(np.int16)

    def acc_bound(self) -> np.ndarray:
        """Per output channel, the largest |accumulator| any int8 input can produce."""
        return np.abs(self.acc_init.astype(np.int64)) + 128 * np.abs(self.weights.astype(np.int64)).sum(axis=1)

    def stream(self):
        """(uint32 words, words before the last block of 4) of the smmlar GEMM: per block of 8
        output channels (a last block of 4 when n % 8 == 4): the doubled accumulator starts, the
        block's doubled weights as packed_weights() orders them, then (mult, ra, right) per channel."""
        consts = self.smmlar()
        w = self.packed_weights().astype(np.int64) * 2
        pairs = (w[0::2] & 0xFFFF) | ((w[1::2] & 0xFFFF) << 16)
        init = self.acc_init.astype(np.int64) * 2
        words, n0, pos, end8 = [], 0, 0, None
        while n0 < self.n:
            b = 8 if n0 + 8 <= self.n else 4
            if b == 4:
                end8 = sum(len(x) for x in words)
            nw = b * self.k // 2
            words += [init[n0:n0 + b], pairs[pos:pos + nw], consts[n0:n0 + b].reshape(-1)]
            pos += nw
            n0 += b
        out = np.concatenate(words) & 0xFFFFFFFF
        return out, (end8 if end8 is not None else len(out))


@dataclass
class ConvLayer(GemmLayer):
    """A convolution (groups 1) run as GEMM rows over gathered windows: k = taps rounded up to 4."""
    geometry: tuple = ()  # (h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow)
    zero_point: int = 0
    ring_rows: int = 0  # in place (CONV_ROWS_INPLACE): input rows the scratch tensor's ring holds


@dataclass
class DepthwiseLayer(_RequantChoice):
    """A 3x3 depthwise convolution (depth multiplier 1, padding <= 1) over an NHWC input."""
    name: str
    instruction: int
    op: str
    h: int
    w: int
    c: int
    oh: int
    ow: int
    stride: int
    pad_h: int
    pad_w: int
    weights: np.ndarray  # int16 [9, c]
    bias: np.ndarray  # int64 [c]
    in_offset: int
    mults: np.ndarray
    shifts: np.ndarray
    out_offset: int
    act_min: int
    act_max: int
    checks: list = field(default_factory=list)
    kind: str = "depthwise3x3"
    inplace_ok: bool = False
    scratch_bytes: int = 0  # in place: the bytes of the variant's scratch tensor (argument 13)

    @property
    def macs(self) -> int:
        return self.oh * self.ow * self.c * 9

    @property
    def weight_bytes(self) -> int:
        return 2 * 9 * self.c

    def acc_bound(self) -> np.ndarray:
        return (np.abs(self.init_table().astype(np.int64)).max(axis=0)
                + 128 * np.abs(self.weights.astype(np.int64)).sum(axis=0))

    @staticmethod
    def _taps(o: int, stride: int, pad: int, size: int) -> tuple:
        i0 = o * stride - pad
        return (max(0, -i0), min(3, size - i0))

    def classes(self):
        """(row class of each oy, column class of each ox, [(ky0, ky1)], [(kx0, kx1)]): the taps inside the input."""
        rows = [self._taps(o, self.stride, self.pad_h, self.h) for o in range(self.oh)]
        cols = [self._taps(o, self.stride, self.pad_w, self.w) for o in range(self.ow)]
        ru, cu = list(dict.fromkeys(rows)), list(dict.fromkeys(cols))
        return [ru.index(r) for r in rows], [cu.index(c) for c in cols], ru, cu

    def init_table(self) -> np.ndarray:
        """int32 [row classes * column classes, c]: bias + input_offset * sum of the weights of the taps inside."""
        _, _, ru, cu = self.classes()
        w = self.weights.astype(np.int64).reshape(3, 3, self.c)
        rows = []
        for ky0, ky1 in ru:
            for kx0, kx1 in cu:
                rows.append(self.bias + self.in_offset * w[ky0:ky1, kx0:kx1].sum(axis=(0, 1)))
        return wrap32(np.array(rows))

    def packed_weights(self) -> np.ndarray:
        """int16: per group of 4 channels, per tap: w[c], w[c+2], w[c+1], w[c+3]."""
        w = self.weights.reshape(9, self.c // 4, 4)[..., [0, 2, 1, 3]].transpose(1, 0, 2)
        return np.ascontiguousarray(w).reshape(-1).astype(np.int16)

    @staticmethod
    def runs(classes) -> list:
        """[(first, end, class)]: runs of consecutive output rows (or columns) of one border class."""
        out = []
        for o, c in enumerate(classes):
            if out and out[-1][2] == c:
                out[-1][1] = o + 1
            else:
                out.append([o, o + 1, c])
        return out


@dataclass
class AddLayer:
    """An int8 add of two operands and an output of one shape and one dim_order (no broadcast):
    out = clamp(requantize(a + b, out_mult, out_shift) + out_zp, act_min, act_max) with
    a = requantize((x - a_zp) << 20, a_mult, a_shift) and b likewise (the reference's quantized_add).
    The output may lie over either operand (the planner's binary_same rule)."""
    name: str
    instruction: int
    op: str
    numel: int
    a_zp: int
    a_mult: int
    a_shift: int
    b_zp: int
    b_mult: int
    b_shift: int
    out_zp: int
    out_mult: int
    out_shift: int
    act_min: int
    act_max: int
    checks: list = field(default_factory=list)
    kind: str = "add"
    inplace_ok: bool = True
    requant_kind: str = "add"

    @property
    def macs(self) -> int:
        return 0

    @property
    def weight_bytes(self) -> int:
        return 0

    @property
    def params(self) -> tuple:
        """The integer arguments 1-3 and 5-12 of the instruction, in the reference's order."""
        return (self.a_zp, self.a_mult, self.a_shift, self.b_zp, self.b_mult, self.b_shift, self.out_zp,
                self.out_mult, self.out_shift, self.act_min, self.act_max)


@dataclass
class Generated:
    layers: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (instruction, op, reason)
    source: str = ""
    prepare: dict = field(default_factory=dict)  # op -> generated prepare function name
    available: int = 0  # --kernels library: the layers `auto` would generate on this core

    def report(self) -> dict:
        return {
            **({"available_layers": self.available} if self.available else {}),
            "layers": [{"instruction": l.instruction, "op": l.op, "kind": l.kind, "function": l.name,
                        "shape": _shape_text(l), "macs": l.macs, "requant": l.requant_kind,
                        "prewidened_weight_bytes": l.weight_bytes} for l in self.layers],
            "prewidened_weight_bytes": sum(l.weight_bytes for l in self.layers),
            "skipped": [{"instruction": i, "op": op, "reason": r} for i, op, r in self.skipped],
        }


def fast_requant(mults, shifts, acc_bound) -> bool:
    """requant_fast applies: every shift a right shift of 1..31, and for every channel
    |acc| * |mult| / 2^31 + 1 + 2^(right - 1) < 2^31 (the 32-bit rounding cannot overflow)."""
    m = np.asarray(mults, np.int64)
    s = np.asarray(shifts, np.int64)
    if s.min() < -31 or s.max() > -1 or m.min() <= -2**31:
        return False
    bound = np.minimum(np.asarray(acc_bound, np.int64), 2**31)
    high = (bound * np.abs(m)) // 2**31 + 1
    return bool(np.all(high + (1 << (-s - 1)) < 2**31))


def smmlar_consts(mults, shifts, acc_bound, out_offset: int):
    """int64 [n, 3] rows (mult, ra, right) of the single-rounding requantization, or None where it
    does not apply. With the accumulator doubled (weights and init x 2, so |acc| < 2^30 is needed),
    CMSIS-NN's two roundings (doubling high multiply, then rounding division by 2^right, ties away
    from zero) and the output offset are one SMMLAR and one arithmetic shift:
        out = (ra + (acc2 >> 31) + ((acc2 * mult + 2^31) >> 32)) >> right,  ra = 2^(right-1) + offset * 2^right
    (``floor((floor(z) + a) / 2^r) = floor((z + a) / 2^r)`` for integer a; a negative accumulator
    has h <= 0 and rounds its ties down, hence the -1). Needs every shift a right shift of 1..31,
    0 <= mult < 2^31 and, per channel, |h| + |ra| + 1 < 2^31 for the largest h the layer can produce."""
    m = np.asarray(mults, np.int64).reshape(-1)
    s = np.asarray(shifts, np.int64).reshape(-1)
    bound = np.asarray(acc_bound, np.int64).reshape(-1)
    if s.min() < -31 or s.max() > -1 or m.min() < 0 or bound.max() >= 2**30:
        return None
    right = -s
    ra = (np.int64(1) << (right - 1)) + int(out_offset) * (np.int64(1) << right)
    high = (bound * m) // 2**31 + 1
    if np.any(high + np.abs(ra) + 1 >= 2**31):
        return None
    return np.stack([m, ra, right], axis=1)


def _u32_array(name: str, values, per_line: int = 8, align: int = 8) -> str:
    vals = [f"0x{int(v) & 0xFFFFFFFF:08x}u" for v in np.asarray(values).reshape(-1)]
    lines = ["  " + ", ".join(vals[i:i + per_line]) + "," for i in range(0, len(vals), per_line)]
    return f"alignas({align}) const uint32_t {name}[{len(vals)}] = {{\n" + "\n".join(lines) + "\n};"


def _round_array(name: str, l) -> str:
    vals = (1 << (-l.shifts.astype(np.int64) - 1)) if l.right_shift_only else np.zeros(len(l.shifts), np.int64)
    return c_array("int32_t", name, vals, per_line=8)


def _shape_text(l) -> str:
    if l.kind == "conv":
        h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
        return f"{h}x{w}x{cin} -> {oh}x{ow}x{l.n}, kernel {kh}x{kw}, stride {sh},{sw}"
    if l.kind == "depthwise3x3":
        return f"{l.h}x{l.w}x{l.c} -> {l.oh}x{l.ow}, stride {l.stride}"
    if l.kind == "add":
        return f"{l.numel} elements"
    return f"{l.rows} x {l.k} -> {l.n}"


# -- eligibility --------------------------------------------------------------------------------
def _t(program: Program, i: int):
    v = program.values[i]
    return v if isinstance(v, TensorValue) else None


def _s(program: Program, i: int):
    v = program.values[i]
    return v.value if isinstance(v, ScalarValue) else None


def _is_none(program: Program, i: int) -> bool:
    v = program.values[i]
    return isinstance(v, ScalarValue) and v.kind == "none"


def _crc(a: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(a).tobytes()) & 0xFFFFFFFF


def _tensor_check(arg: int, t: TensorValue) -> str:
    sizes = ", ".join(str(int(s)) for s in t.shape)
    order = ", ".join(str(int(d)) for d in (t.dim_order or range(len(t.shape))))
    dtype = {"int8": "DType::Int8", "int32": "DType::Int32"}[t.dtype]
    return f"tensor_is(ctx, {arg}, {dtype}, {{{sizes}}}, {{{order}}})"


def _constant_check(arg: int, t: TensorValue) -> str:
    return f"constant_is(ctx, {arg}, {t.nbytes}u, 0x{_crc(t.data):08x}u)"


def _int_check(arg: int, v: int) -> str:
    return f"int_is(ctx, {arg}, {int(v)})"


def _list_check(arg: int, items) -> str:
    return f"list_is(ctx, {arg}, {{{', '.join(str(int(v)) for v in items)}}})"


def _requant_args(program: Program, a, mi: int, in_off_i: int, act_i: int):
    """The requantization arguments of a quantized conv/linear call ``a`` (bias at a[2], multipliers
    and shifts at a[mi], a[mi + 1], input/output offsets at a[in_off_i], a[in_off_i + 1], activation
    range at a[act_i], a[act_i + 1]): (bias, multipliers, shifts, in_off, out_off, act_min, act_max,
    multipliers and shifts as int64 arrays), or why they cannot be generated."""
    bias = _t(program, a[2]) if not _is_none(program, a[2]) else None
    mt, st = _t(program, a[mi]), _t(program, a[mi + 1])
    if mt is None or st is None or mt.data is None or st.data is None or (bias is not None and bias.data is None):
        return "requantization parameters not constant"
    in_off, out_off = int(_s(program, a[in_off_i])), int(_s(program, a[in_off_i + 1]))
    act_min, act_max = int(_s(program, a[act_i])), int(_s(program, a[act_i + 1]))
    mults = np.asarray(mt.data, np.int64).reshape(-1)
    shifts = np.asarray(st.data, np.int64).reshape(-1)
    return bias, mt, st, in_off, out_off, act_min, act_max, mults, shifts


def _pointwise(program: Program, idx: int, ins) -> GemmLayer | str:
    a = ins.args
    x, w, out = _t(program, a[0]), _t(program, a[1]), _t(program, a[13])
    if x is None or w is None or out is None or w.data is None:
        return "non-constant weight"
    if x.dtype != "int8" or w.dtype != "int8" or out.dtype != "int8" or len(x.shape) != 4 or len(w.shape) != 4:
        return "not a 4-D int8 convolution"
    if (tuple(x.dim_order or (0, 1, 2, 3)) != (0, 2, 3, 1) and not (x.shape[2] == x.shape[3] == 1)
            and x.shape[1] != 1):
        return "input not channels-last"
    cout, kh, kw, cin_g = (int(s) for s in w.shape)
    n_, cin, h, wd = (int(s) for s in x.shape)
    if cin_g != cin:
        return "grouped convolution"
    stride, pad, dil = _s(program, a[3]), _s(program, a[4]), _s(program, a[5])
    if any(int(d) != 1 for d in dil):
        return "dilation"
    if ((kh, kw) != (1, 1) or list(stride) not in ([1], [1, 1]) or any(int(p) != 0 for p in pad)
            or ins.op == CONV_ROWS_INPLACE):
        return _conv(program, idx, ins)
    if cin % 4 or cout % 4:
        return f"channels {cin}->{cout} not multiples of 4"
    if cin > MAX_K:
        return "too many input channels"
    if ins.op != POINTWISE_OPS[0] and cout > cin:
        return "widening in place (the output over the input, shifted): no generated form"
    if tuple(out.shape) != (n_, cout, h, wd):
        return "unexpected output shape"
    q = _requant_args(program, a, mi=8, in_off_i=6, act_i=10)
    if isinstance(q, str):
        return q
    bias, mt, st, in_off, out_off, act_min, act_max, mults, shifts = q
    if mults.size != cout or shifts.size != cout or abs(in_off) > 256:
        return "unexpected parameter sizes"
    if shifts.min() < -63 or shifts.max() > 31 or not (-128 <= act_min <= act_max <= 127):
        return "parameters outside the kernels' range"
    wt = np.asarray(w.data, np.int64).reshape(cout, cin)
    init = wt.sum(axis=1) * in_off + (np.asarray(bias.data, np.int64).reshape(-1) if bias is not None else 0)
    checks = [_tensor_check(0, x), _tensor_check(1, w), _constant_check(1, w), _tensor_check(13, out),
              _constant_check(8, mt), _constant_check(9, st),
              _list_check(3, stride), _list_check(4, pad), _list_check(5, dil),
              _int_check(6, in_off), _int_check(7, out_off), _int_check(10, act_min),
              _int_check(11, act_max)]
    checks.append(_constant_check(2, bias) if bias is not None else "ctx.is_none(2)")
    return GemmLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="pointwise", rows=n_ * h * wd, k=cin,
                     n=cout, weights=wt.astype(np.int16), acc_init=wrap32(init), mults=mults.astype(np.int32),
                     shifts=shifts.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                     inplace_ok=cout <= cin, checks=checks)


def _conv(program: Program, idx: int, ins) -> ConvLayer | str:
    a = ins.args
    x, w, out = _t(program, a[0]), _t(program, a[1]), _t(program, a[13])
    cout, kh, kw, cin = (int(s) for s in w.shape)
    n_, _, h, wd = (int(s) for s in x.shape)
    stride = [int(v) for v in _s(program, a[3])]
    pad = [int(v) for v in _s(program, a[4])]
    sh, sw = (stride * 2)[:2] if len(stride) == 1 else stride
    ph, pw = (pad * 2)[:2] if len(pad) == 1 else pad
    if n_ != 1 or cout % 4 or ph >= kh or pw >= kw:
        return "batch > 1, output channels not a multiple of 4, or padding >= kernel"
    taps = kh * kw * cin
    k = (taps + 3) // 4 * 4
    if k > 4096:
        return "window larger than 4096 bytes"
    oh, ow = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    if tuple(out.shape) != (1, cout, oh, ow) or tuple(out.dim_order or ()) != (0, 2, 3, 1):
        return "unexpected output shape or layout"
    q = _requant_args(program, a, mi=8, in_off_i=6, act_i=10)
    if isinstance(q, str):
        return q
    bias, mt, st, in_off, out_off, act_min, act_max, mults, shifts = q
    if mults.size != cout or shifts.size != cout or not (-128 <= -in_off <= 127):
        return "unexpected parameter sizes or input offset"
    if shifts.min() < -63 or shifts.max() > 31 or not (-128 <= act_min <= act_max <= 127):
        return "parameters outside the kernels' range"
    wt = np.zeros((cout, k), np.int64)
    wt[:, :taps] = np.asarray(w.data, np.int64).reshape(cout, taps)
    init = wt.sum(axis=1) * in_off + (np.asarray(bias.data, np.int64).reshape(-1) if bias is not None else 0)
    checks = [_tensor_check(0, x), _tensor_check(1, w), _constant_check(1, w), _tensor_check(13, out),
              _constant_check(8, mt), _constant_check(9, st),
              _list_check(3, _s(program, a[3])), _list_check(4, _s(program, a[4])),
              _list_check(5, _s(program, a[5])), _int_check(6, in_off), _int_check(7, out_off),
              _int_check(10, act_min), _int_check(11, act_max)]
    checks.append(_constant_check(2, bias) if bias is not None else "ctx.is_none(2)")
    ring_rows = 0
    if ins.op == CONV_ROWS_INPLACE:  # the ring of saved input rows: the variant's scratch tensor
        scratch = _t(program, a[CONV_SCRATCH_ARG])
        row = wd * cin
        if scratch is None or scratch.dtype != "int8" or len(scratch.shape) != 1 or scratch.nbytes < row:
            return "in place without a scratch of at least one input row"
        if sh != (stride * 2)[0] or n_ != 1:
            return "in place with unequal strides"
        ring_rows = scratch.nbytes // row
        checks += [_tensor_check(12, scratch), "apart(ctx, 12, 0)", "apart(ctx, 12, 13)"]
    return ConvLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="conv", rows=oh * ow, k=k, n=cout,
                     weights=wt.astype(np.int16), acc_init=wrap32(init), mults=mults.astype(np.int32),
                     shifts=shifts.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                     inplace_ok=bool(ring_rows), checks=checks,
                     geometry=(h, wd, cin, kh, kw, sh, sw, ph, pw, oh, ow), zero_point=-in_off, ring_rows=ring_rows)


def _linear(program: Program, idx: int, ins) -> GemmLayer | str:
    a = ins.args
    x, w, out = _t(program, a[0]), _t(program, a[1]), _t(program, a[11])
    if x is None or w is None or out is None or w.data is None:
        return "non-constant weight"
    if x.dtype != "int8" or w.dtype != "int8" or out.dtype != "int8" or len(w.shape) != 2:
        return "not an int8 linear"
    if x.dim_order not in (None, tuple(range(len(x.shape)))) or out.dim_order not in (None, tuple(range(len(out.shape)))):
        return "not contiguous"
    n, k = (int(s) for s in w.shape)
    if int(x.shape[-1]) != k or int(out.shape[-1]) != n:
        return "unexpected shapes"
    if k % 4 or n % 4:
        return f"sizes {k}->{n} not multiples of 4"
    if k > MAX_K:
        return "K too large"
    rows = int(np.prod(x.shape[:-1])) if len(x.shape) > 1 else 1
    bias = _t(program, a[2]) if not _is_none(program, a[2]) else None
    ks = _t(program, a[3]) if not _is_none(program, a[3]) else None
    if (bias is not None and bias.data is None) or (ks is not None and ks.data is None):
        return "bias or kernel sum not constant"
    in_off, f_off, out_off = (int(_s(program, a[i])) for i in (4, 5, 6))
    mults, shifts = list(_s(program, a[7])), list(_s(program, a[8]))
    act_max, act_min = int(_s(program, a[9])), int(_s(program, a[10]))
    if len(mults) not in (1, n) or len(shifts) != len(mults) or abs(in_off) > 256 or abs(f_off) > 256:
        return "unexpected parameters"
    if min(shifts) < -63 or max(shifts) > 31 or not (-128 <= act_min <= act_max <= 127):
        return "parameters outside the kernels' range"
    wt = np.asarray(w.data, np.int64).reshape(n, k) + f_off
    if ks is not None:  # sum x*w + f*sum x + ks = sum x*(w+f) + ks
        init = np.asarray(ks.data, np.int64).reshape(-1)
    else:  # sum (x+io)(w+f) + bias = sum x*(w+f) + io*sum(w+f) + bias
        init = in_off * wt.sum(axis=1) + (np.asarray(bias.data, np.int64).reshape(-1) if bias is not None else 0)
    checks = [_tensor_check(0, x), _tensor_check(1, w), _constant_check(1, w), _tensor_check(11, out),
              _int_check(5, f_off), _int_check(6, out_off), _int_check(9, act_max),
              _int_check(10, act_min), _list_check(7, mults), _list_check(8, shifts)]
    if ks is not None:
        checks.append(_constant_check(3, ks))
    else:
        checks += ["ctx.is_none(3)", _int_check(4, in_off),
                   _constant_check(2, bias) if bias is not None else "ctx.is_none(2)"]
    m = np.resize(np.asarray(mults, np.int64), n)
    s = np.resize(np.asarray(shifts, np.int64), n)
    return GemmLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="linear", rows=rows, k=k, n=n,
                     weights=wt.astype(np.int16), acc_init=wrap32(init), mults=m.astype(np.int32),
                     shifts=s.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                     inplace_ok=False, checks=checks)


def _depthwise(program: Program, idx: int, ins, isa: str = "dsp") -> DepthwiseLayer | str:
    """``isa``: "dsp" (this file's kernel: an in-place layer copies a channel group of H * W * 4
    bytes to the stack) or "mve" (generated_mve.py: rows copied to the in-place variant's scratch)."""
    a = ins.args
    x, w, out = _t(program, a[0]), _t(program, a[1]), _t(program, a[14])
    if x is None or w is None or out is None or w.data is None:
        return "non-constant weight"
    if x.dtype != "int8" or w.dtype != "int8" or out.dtype != "int8" or len(x.shape) != 4 or len(w.shape) != 4:
        return "not a 4-D int8 depthwise convolution"
    if tuple(x.dim_order or ()) != (0, 2, 3, 1) or tuple(out.dim_order or ()) != (0, 2, 3, 1):
        return "input or output not channels-last"
    n_, c, h, wd = (int(v) for v in x.shape)
    one, kh, kw, cout = (int(v) for v in w.shape)
    if (one, kh, kw) != (1, 3, 3) or cout != c:
        return "not a 3x3 depthwise convolution with depth multiplier 1"
    stride, pad, dil = list(_s(program, a[3])), list(_s(program, a[4])), list(_s(program, a[5]))
    stride = stride * 2 if len(stride) == 1 else stride
    pad = pad * 2 if len(pad) == 1 else pad
    if stride[0] != stride[1] or any(int(d) != 1 for d in dil) or int(_s(program, a[6])) != 1:
        return "unequal strides, dilation or depth multiplier"
    if not all(0 <= int(p) <= 1 for p in pad) or c % 4 or n_ != 1:
        return "padding > 1, channels not a multiple of 4, or batch > 1"
    s_ = int(stride[0])
    oh, ow = (h + 2 * int(pad[0]) - 3) // s_ + 1, (wd + 2 * int(pad[1]) - 3) // s_ + 1
    if tuple(out.shape) != (1, c, oh, ow):
        return "unexpected output shape"
    inplace = ins.op != "cortex_m::quantized_depthwise_conv2d.out"
    if isa == "dsp" and inplace and h * wd * 4 > INPLACE_GROUP_BYTES:
        return f"in place with a channel group of {h * wd * 4} bytes (> {INPLACE_GROUP_BYTES} of stack)"
    q = _requant_args(program, a, mi=9, in_off_i=7, act_i=11)
    if isinstance(q, str):
        return q
    bias, mt, st, in_off, out_off, act_min, act_max, mults, shifts = q
    if mults.size != c or shifts.size != c or abs(in_off) > 256:
        return "unexpected parameter sizes"
    if shifts.min() < -63 or shifts.max() > 31 or not (-128 <= act_min <= act_max <= 127):
        return "parameters outside the kernels' range"
    checks = [_tensor_check(0, x), _tensor_check(1, w), _constant_check(1, w), _tensor_check(14, out),
              _constant_check(9, mt), _constant_check(10, st),
              _list_check(3, _s(program, a[3])), _list_check(4, _s(program, a[4])), _list_check(5, dil),
              _int_check(6, 1), _int_check(7, in_off), _int_check(8, out_off), _int_check(11, act_min),
              _int_check(12, act_max)]
    checks.append(_constant_check(2, bias) if bias is not None else "ctx.is_none(2)")
    b = np.asarray(bias.data, np.int64).reshape(-1) if bias is not None else np.zeros(c, np.int64)
    scratch = _t(program, a[13]) if inplace else None
    scratch_bytes = scratch.nbytes if scratch is not None and scratch.dtype == "int8" and len(scratch.shape) == 1 else 0
    if scratch_bytes:
        checks.append(_tensor_check(13, scratch))
    return DepthwiseLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, h=h, w=wd, c=c, oh=oh, ow=ow, stride=s_,
                          pad_h=int(pad[0]), pad_w=int(pad[1]),
                          weights=np.asarray(w.data, np.int64).reshape(9, c).astype(np.int16), bias=b,
                          in_offset=in_off, mults=mults.astype(np.int32), shifts=shifts.astype(np.int32),
                          out_offset=out_off, act_min=act_min, act_max=act_max, checks=checks, inplace_ok=inplace,
                          scratch_bytes=scratch_bytes)


def _add(program: Program, idx: int, ins) -> AddLayer | str:
    """cortex_m::quantized_add with equal shapes and dim_orders (the residual adds); a broadcast
    operand stays on the library kernel."""
    a = ins.args
    x, y, out = _t(program, a[0]), _t(program, a[4]), _t(program, a[13])
    if x is None or y is None or out is None or not all(t.dtype == "int8" for t in (x, y, out)):
        return "not an int8 add"
    if not (tuple(x.shape) == tuple(y.shape) == tuple(out.shape)):
        return "broadcast (operands of different shapes)"
    orders = {tuple(t.dim_order or range(len(t.shape))) for t in (x, y, out)}
    if len(orders) != 1:
        return "operands and output in different dim orders"
    ints = [_s(program, a[i]) for i in (1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12)]
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in ints):
        return "integer arguments not constant"
    a_zp, a_m, a_s, b_zp, b_m, b_s, o_zp, o_m, o_s, lo, hi = (int(v) for v in ints)
    if not all(-256 <= z <= 256 for z in (a_zp, b_zp, o_zp)) or not all(-63 <= v <= 31 for v in (a_s, b_s, o_s)):
        return "parameters outside the kernels' range"
    if not all(-2**31 <= m < 2**31 for m in (a_m, b_m, o_m)) or not -128 <= lo <= hi <= 127:
        return "parameters outside the kernels' range"
    numel = int(np.prod(out.shape))
    if numel < 1:
        return "empty tensors"
    checks = [_tensor_check(0, x), _tensor_check(4, y), _tensor_check(13, out)]
    checks += [_int_check(i, v) for i, v in zip((1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12), ints)]
    return AddLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, numel=numel, a_zp=a_zp, a_mult=a_m, a_shift=a_s,
                    b_zp=b_zp, b_mult=b_m, b_shift=b_s, out_zp=o_zp, out_mult=o_m, out_shift=o_s, act_min=lo,
                    act_max=hi, checks=checks)


def wrap32(v) -> np.ndarray:
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def covers(program: Program, idx: int, op: str, isa: str = "dsp") -> bool:
    """Whether the generator takes instruction ``idx`` if it were operator ``op`` (same arguments)."""
    from dataclasses import replace

    ins = replace(program.instructions[idx], op=op)
    if op in DEPTHWISE_OPS:
        return not isinstance(_depthwise(program, idx, ins, isa), str)
    match = _pointwise if op in POINTWISE_OPS else _linear if op in LINEAR_OPS else _add if op in ADD_OPS else None
    return match is not None and not isinstance(match(program, idx, ins), str)


def eligible(program: Program, isa: str = "dsp"):
    """(layers, skipped): a GemmLayer for every instruction the generator covers."""
    layers, skipped = [], []
    for idx, ins in enumerate(program.instructions):
        if ins.op in POINTWISE_OPS:
            r = _pointwise(program, idx, ins)
        elif ins.op in LINEAR_OPS:
            r = _linear(program, idx, ins)
        elif ins.op in DEPTHWISE_OPS:
            r = _depthwise(program, idx, ins, isa)
        elif ins.op in ADD_OPS:
            r = _add(program, idx, ins)
        else:
            continue
        if isinstance(r, str):
            skipped.append((idx, ins.op, r))
        else:
            layers.append(r)
    return layers, skipped


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


CONV_SCRATCH_ARG = 12  # the in-place convolution variants' scratch tensor (the ring of saved rows)


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


def _slug(op: str) -> str:
    return op.replace("::", "_").replace(".", "_")


# -- the elementwise add on the DSP cores ---------------------------------------------------------
# out = clamp(requantize(a + b, out_mult, out_shift) + out_zp): a and b are functions of one int8
# each, so the generator tabulates them (exact, 2 x 256 int32 in flash, doubled) and the loop adds
# two table entries and requantizes the doubled sum in one rounding with the output offset folded
# (requant_smmlar, as the GEMM: ADD, SMMLAR, ASR, SSAT). Exact where add_dsp_plan's emulation of
# that loop equals the reference on all 65,536 int8 pairs; else the library kernel.


def add_reference(x, y, params) -> np.ndarray:
    """The reference's quantized_add (quantize/arith.py, as the integer reference runs it) of int8
    arrays x, y with AddLayer.params."""
    a_zp, a_m, a_s, b_zp, b_m, b_s, o_zp, o_m, o_s, lo, hi = params
    return quantized_add(x, a_zp, a_m, a_s, y, b_zp, b_m, b_s, o_zp, o_m, o_s, lo, hi)


def wrap_i32(v):
    """int64 values wrapped to int32 (two's complement), kept as int64."""
    return ((np.asarray(v, np.int64) + 2**31) & 0xFFFFFFFF) - 2**31


def add_dsp_plan(l: AddLayer):
    """(doubled table of a, of b — indexed by the int8's bit pattern —, ra, right) of the DSP add, or why
    it has none: the loop's arithmetic, emulated on every pair of int8 values, must equal the reference."""
    right = -l.out_shift
    if not 1 <= right <= 31:
        return "add: the output shift is not a right shift of 1..31"
    v = np.arange(256, dtype=np.int64)
    v = np.where(v < 128, v, v - 256)  # the int8 of each bit pattern
    ta = 2 * requantize((v - l.a_zp) << SHIFT_INT8, l.a_mult, l.a_shift)
    tb = 2 * requantize((v - l.b_zp) << SHIFT_INT8, l.b_mult, l.b_shift)
    if int(np.abs(ta).max()) + int(np.abs(tb).max()) >= 2**31:
        return "add: the doubled sum may exceed 32 bits"
    ra = (1 << (right - 1)) + l.out_zp * (1 << right)
    if abs(ra) >= 2**30:  # ra + (s2 >> 31) and SMMLAR's 64-bit sum (the C form's too) stay in range
        return "add: the output offset does not fold into the rounding constant"
    s2 = ta[:, None] + tb[None, :]  # ADD (x and y by bit pattern), no overflow (checked above)
    r = wrap_i32(ra + (s2 >> 31) + ((s2 * l.out_mult + 2**31) >> 32)) >> right  # SMMLAR, ASR
    got = np.clip(r, max(-128, l.act_min), min(127, l.act_max))
    want = add_reference(v[:, None], v[None, :], l.params)
    if not np.array_equal(got, want):
        return "add: no exact single-rounding requantization of the sum"
    return ta, tb, ra, right


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


def prepare_hooks_source(layers, by_op: dict, g: "Generated") -> list:
    """The end of a generated file (in namespace mcu::kernels): the library kernels' declarations and,
    per operator, the prepare function that returns the generated layer an instruction is (its checks
    at load) or else the library kernel; records each in ``g.prepare``. Shared by the DSP and MVE files."""
    parts = []
    ops = list(dict.fromkeys(l.op for l in layers))
    for op in ops:
        lib = by_op[op]
        parts.append(f"Error {lib.fn}(const KernelContext& ctx);")
        if lib.prepare:
            parts.append(f"KernelFn {lib.prepare}(const KernelContext& ctx);")
    parts.append("")
    for op in ops:
        lib = by_op[op]
        name = f"generated_prepare_{_slug(op)}"
        g.prepare[op] = name
        fallback = f"{lib.prepare}(ctx)" if lib.prepare else f"&{lib.fn}"
        body = [f"// {op}: the generated layer this instruction is, else the library kernel ({lib.backend}).",
                f"KernelFn {name}(const KernelContext& ctx) {{"]
        for l in layers:
            if l.op == op:
                body.append(f"  if (generated::{l.name}_matches(ctx)) return &generated::{l.name};")
        body += [f"  return {fallback};", "}", ""]
        parts.append("\n".join(body))
    parts.append("}  // namespace kernels\n}  // namespace mcu\n")
    return parts


def bind_at_load(source: str, layers) -> str:
    """Generated layers bound at load, without the value cache (issue 25): each layer's runtime function
    reads the data pointers of its tensors from a small array (one pointer per tensor it touches) that its
    _matches() fills once, at load, after every check held; the checks decode the arguments on demand.
    So a generated layer needs neither every value decoded nor any argument decoding per call. A layer
    matches only the instruction it was generated for (its index, ctx.instruction_), so two identical
    instructions never share (and re-bind) one layer."""
    import re

    for layer in layers:
        name = layer.name
        run = f"Error {name}(const KernelContext& ctx) {{"
        i = source.index(run)
        j = source.index("\n}\n", i)
        body = source[i:j]
        args = list(dict.fromkeys(int(a) for a in re.findall(r"ctx\.decoded_data\((\d+)\)", body)))
        if not args:
            continue
        slot = {a: k for k, a in enumerate(args)}
        body = re.sub(r"ctx\.decoded_data\((\d+)\)", lambda m: f"{name}_bound[{slot[int(m.group(1))]}]", body)
        source = source[:i] + body + source[j:]
        head = f"bool {name}_matches(const KernelContext& ctx) {{\n  return "
        m0 = source.index(head)
        m1 = source.index(";\n}\n", m0)
        expr = source[m0 + len(head):m1]
        binds = "".join(f"  {name}_bound[{k}] = ctx.tensor({a}).data;\n" for a, k in slot.items())
        source = (source[:m0] + f"void* {name}_bound[{len(args)}];  // data pointers, bound at load\n"
                  + f"bool {name}_matches(const KernelContext& ctx) {{\n"
                  + f"  if (ctx.instruction_ != {int(layer.instruction)} || !({expr})) return false;\n"
                  + binds + "  return true;\n}\n" + source[m1 + len(";\n}\n"):])
    return source


def hooked_kernels(kernels, g: Generated):
    """The selection with each generated operator's entry given its generated prepare function."""
    from dataclasses import replace

    return [replace(k, prepare=g.prepare[k.op]) if k.op in g.prepare else k for k in kernels]
