"""What a generated layer is: the operators with a generated form, one dataclass per kind of layer
(GEMM, convolution, depthwise, add) with its weights packed in the order the generated inner loop
reads them, and the build's list of generated layers (Generated, for report.json)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mcu_gen.backends.generated.exactness import fast_requant, sign_free, smmlar_consts, wrap32

GENERATED_FILE = "generated_kernels.cpp"
MODES = ("auto", "library", "generated")

# Operators with a generated form, and what they compute.
POINTWISE_OPS = ("cortex_m::quantized_conv2d.out", "mcu::quantized_conv2d_pointwise_inplace.out",
                 "mcu::quantized_conv2d_rows_inplace.out")
CONV_ROWS_INPLACE = POINTWISE_OPS[2]  # a k x k convolution written row by row over its input
LINEAR_OPS = ("cortex_m::quantized_linear.out",)
DEPTHWISE_OPS = ("cortex_m::quantized_depthwise_conv2d.out", "mcu::quantized_depthwise_conv2d_inplace.out")
# Stack for an in-place depthwise layer's three input rows (NHWC: W * 4 each; planar, channels not a multiple of 4:
# int16 rows) where the scratch cannot hold them, else the library kernel: the image links the library in-place
# depthwise kernel as the generated layer's fallback, whose deepest path below Executor::execute is 728 B, a generated
# layer's about 150 B besides its rows (M33, GCC 12). It was 4,096 B: a 3x3 depthwise of 8 channels over 4 rows of
# 300 pixels kept 3,600 B on the stack, its default build 3,200 B more RAM than its library build (5 channels:
# 1,344 B).
INPLACE_GROUP_BYTES = 576
ADD_OPS = ("cortex_m::quantized_add.out",)
# The quantized add's library kernel (kernels_portable/op_cortex_m_quantized_add.cpp, in every image of a program
# with an add: the generated adds' fallback) keeps a 256-entry int32 table on its stack (add_by_table).
ADD_TABLE_STACK_BYTES = 1024
GENERATED_OPS = POINTWISE_OPS + LINEAR_OPS + DEPTHWISE_OPS + ADD_OPS
MAX_K = 14563  # as the portable kernels: |sum| of K products of (int8 + 256) * (int16) stays in int32

# A DSP fully connected layer whose K is not a multiple of 4 copies its rows, zero padded, into a buffer on the stack
# (it has no scratch tensor): its rows of K rounded up (and their output rows where N is not a multiple of 4; the
# two-row GEMM's widened rows) at most this many bytes, so that the layer's stack stays within the library linear
# kernel's, which the image links as the generated layer's fallback: its deepest path below Executor::execute is
# 352 B, a generated layer's about 100 B besides its buffers (M33, GCC 12; an MLP 29->23->250->10 with 276 B of
# buffers for its 23->250 layer took 24 B more stack than its library build).
PADDED_STACK_BYTES = 248
CONV_SCRATCH_ARG = 12  # the in-place convolution variants' scratch tensor (the ring of saved rows)


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

    @property
    def sign(self) -> bool:
        """Whether the smmlar requantization keeps its sign term (exactness.sign_free: not under a fused ReLU)."""
        return not sign_free(self.out_offset, self.act_min)


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
    inplace_ok: bool  # output may start at the input's address (Cout <= Cin, or the in-place variant's rows from the last)
    checks: list = field(default_factory=list)  # C++ boolean expressions over ctx, all must hold
    # The scratch tensor (argument 12 of a convolution) as room for the per-call buffers (dsp_work.work_plan):
    # its bytes from scratch_at (after an in-place convolution's ring), and the checks that find it at load.
    scratch_room: int = 0
    scratch_at: int = 0
    scratch_checks: list = field(default_factory=list)
    # Stack bytes the image's library kernels take anyway (match.eligible: the quantized add's 1 KB table when the
    # program has an add), so a generated layer's stack buffers up to it do not raise the stack bound (wide_ok).
    stack_room: int = 0
    # Output channels where ``n`` is them rounded up to a multiple of 4 (the DSP GEMM's blocks; match._narrow): the
    # GEMM writes rows of n into a buffer and the layer copies the first n_out of each (gemm_stream_rows). 0: n.
    n_out: int = 0
    # Input row length where ``k`` is it rounded up to a multiple of 4 (a DSP fully connected layer; match._pad_k):
    # the rows are copied into a buffer of rows of k with zero bytes past k_in (gemm_stream_padded). 0: k.
    k_in: int = 0

    @property
    def macs(self) -> int:
        return self.rows * (self.k_in or self.k) * (self.n_out or self.n)

    @property
    def weight_bytes(self) -> int:
        """Flash of the pre-widened weight copy (the program keeps its int8 weights too)."""
        return 2 * self.n * self.k

    def packed_weights(self, order=None) -> np.ndarray:
        """int16 weights in inner-loop order: for each block of 8 output channels (a last block of
        4 when n % 8 == 4), for each group of 4 inputs k..k+3, for each channel of the block:
        w[k], w[k+2], w[k+1], w[k+3] — the two int16 pairs that SMLAD multiplies with SXTB16(x)
        and SXTB16(x ror 8). ``order``: the inputs in this order (indices into k), e.g. the taps of a
        convolution that gathers its windows widened (dsp_work.pre_order)."""
        weights = self.weights if order is None else self.weights[:, order]
        blocks, n0 = [], 0
        while n0 < self.n:
            b = 8 if n0 + 8 <= self.n else 4
            w = weights[n0:n0 + b].reshape(b, self.k // 4, 4).transpose(1, 0, 2)[..., [0, 2, 1, 3]]
            blocks.append(np.ascontiguousarray(w).reshape(-1))
            n0 += b
        return np.concatenate(blocks).astype(np.int16)

    def acc_bound(self) -> np.ndarray:
        """Per output channel, the largest |accumulator| any int8 input can produce."""
        return np.abs(self.acc_init.astype(np.int64)) + 128 * np.abs(self.weights.astype(np.int64)).sum(axis=1)

    def stream(self, order=None):
        """(uint32 words, words before the last block of 4) of the smmlar GEMM: per block of 8
        output channels (a last block of 4 when n % 8 == 4): the doubled accumulator starts, the
        block's doubled weights as packed_weights(order) orders them, then (mult, ra, right) per channel."""
        consts = self.smmlar()
        w = self.packed_weights(order).astype(np.int64) * 2
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
    """A kh x kw depthwise convolution (depth multiplier 1, padding < kernel) over an NHWC input. The 3x3 layers
    of equal strides and padding <= 1 have the planar paths (dsp_depthwise_asm.dw_plane); every layer the NHWC one
    (dw_pixels)."""
    name: str
    instruction: int
    op: str
    h: int
    w: int
    c: int
    oh: int
    ow: int
    stride: int  # between output rows (and columns, unless stride_w)
    pad_h: int
    pad_w: int
    weights: np.ndarray  # int16 [kh * kw, c]
    bias: np.ndarray  # int64 [c]
    in_offset: int
    mults: np.ndarray
    shifts: np.ndarray
    out_offset: int
    act_min: int
    act_max: int
    checks: list = field(default_factory=list)
    kind: str = "depthwise"
    inplace_ok: bool = False
    scratch_bytes: int = 0  # in place: the bytes of the variant's scratch tensor (argument 13)
    kh: int = 3
    kw: int = 3
    stride_w: int = 0  # between output columns where it differs from ``stride`` (a Conv1d's (1, s)); 0: stride
    # DSP, channels not a multiple of 4 on the NHWC path (where the planar paths do not take the layer): c % 4, the
    # channels of the last group (dw_pixels' kTail: a rotated word, zero weights and starts past them), else 0
    tail: int = 0

    @property
    def sw(self) -> int:
        return self.stride_w or self.stride

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def is_3x3(self) -> bool:
        """The shape the planar paths and the M55's 3x3 kernel take: 3x3, one stride, padding <= 1."""
        return (self.kh, self.kw) == (3, 3) and self.sw == self.stride and max(self.pad_h, self.pad_w) <= 1

    @property
    def macs(self) -> int:
        return self.oh * self.ow * self.c * self.taps

    @property
    def weight_bytes(self) -> int:
        return 2 * self.taps * (self.c + (-self.c % 4 if self.tail else 0))

    @property
    def offset_in_taps(self) -> bool:
        """Whether each tap adds (x + input_offset) * w (dw_tap_off: SXTAB16) and every border class starts from the
        bias, where the 3x3 layers start each class from bias + input_offset * (its taps' weights) (one table row per
        class: 25 for a 5x5 kernel with padding 2, more flash than its weights). The last channels' group (``tail``)
        reads channels of its pixel before its own, against zero weights: they must add nothing, with or without the
        offset."""
        return (self.kh, self.kw) != (3, 3) or self.tail > 0

    def acc_bound(self) -> np.ndarray:
        w = np.abs(self.weights.astype(np.int64)).sum(axis=0)
        if self.offset_in_taps:
            return np.abs(self.bias.astype(np.int64)) + (128 + abs(self.in_offset)) * w
        return np.abs(self.init_table().astype(np.int64)).max(axis=0) + 128 * w

    @staticmethod
    def _taps(o: int, stride: int, pad: int, size: int, k: int = 3) -> tuple:
        i0 = o * stride - pad
        lo, hi = max(0, -i0), min(k, size - i0)
        return (lo, max(lo, hi))

    def classes(self):
        """(row class of each oy, column class of each ox, [(ky0, ky1)], [(kx0, kx1)]): the taps inside the input."""
        rows = [self._taps(o, self.stride, self.pad_h, self.h, self.kh) for o in range(self.oh)]
        cols = [self._taps(o, self.sw, self.pad_w, self.w, self.kw) for o in range(self.ow)]
        ru, cu = list(dict.fromkeys(rows)), list(dict.fromkeys(cols))
        return [ru.index(r) for r in rows], [cu.index(c) for c in cols], ru, cu

    def init_table(self) -> np.ndarray:
        """int32 [row classes * column classes, c]: bias + input_offset * sum of the weights of the taps inside
        (offset_in_taps: [1, c], the bias)."""
        if self.offset_in_taps:
            return wrap32(self.bias.astype(np.int64)[None, :])
        _, _, ru, cu = self.classes()
        w = self.weights.astype(np.int64).reshape(self.kh, self.kw, self.c)
        rows = []
        for ky0, ky1 in ru:
            for kx0, kx1 in cu:
                rows.append(self.bias + self.in_offset * w[ky0:ky1, kx0:kx1].sum(axis=(0, 1)))
        return wrap32(np.array(rows))

    def packed_weights(self) -> np.ndarray:
        """int16: per group of 4 channels (zero channels pad the last), per tap: w[c], w[c+2], w[c+1], w[c+3]."""
        c4 = (self.c + 3) // 4 * 4
        w = np.zeros((self.taps, c4), np.int64)
        w[:, :self.c] = self.weights.reshape(self.taps, self.c)
        w = w.reshape(self.taps, c4 // 4, 4)[..., [0, 2, 1, 3]].transpose(1, 0, 2)
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
    regenerate: object = field(default=None, repr=False, compare=False)  # the builder's: the layers for a new plan

    def report(self) -> dict:
        return {
            **({"available_layers": self.available} if self.available else {}),
            "layers": [{"instruction": l.instruction, "op": l.op, "kind": l.kind, "function": l.name,
                        "shape": _shape_text(l), "macs": l.macs, "requant": l.requant_kind,
                        "prewidened_weight_bytes": l.weight_bytes} for l in self.layers],
            "prewidened_weight_bytes": sum(l.weight_bytes for l in self.layers),
            "skipped": [{"instruction": i, "op": op, "reason": r} for i, op, r in self.skipped],
        }

def _shape_text(l) -> str:
    if l.kind == "conv":
        h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
        return f"{h}x{w}x{cin} -> {oh}x{ow}x{l.n}, kernel {kh}x{kw}, stride {sh},{sw}"
    if l.kind == "depthwise":
        stride = l.stride if l.sw == l.stride else f"{l.stride},{l.sw}"
        return f"{l.h}x{l.w}x{l.c} -> {l.oh}x{l.ow}, kernel {l.kh}x{l.kw}, stride {stride}"
    if l.kind == "add":
        return f"{l.numel} elements"
    return f"{l.rows} x {l.k} -> {l.n}"


def conv_ring_rows(in_h: int, in_row: int, out_h: int, out_row: int, stride: int, pad: int) -> int:
    """Rows of the ring mcu::quantized_conv2d_rows_inplace keeps (its ring_rows(), same arithmetic): the
    most input rows that output rows written so far have overwritten while this or a later output row
    still reads them (rows >= r * stride - pad). At least 1."""
    saved_hi, most = -1, 1
    for r in range(out_h):
        hi = min(((r + 1) * out_row - 1) // in_row, in_h - 1)
        saved_hi = max(saved_hi, hi)
        most = max(most, saved_hi - max(r * stride - pad, 0) + 1)
    return most
