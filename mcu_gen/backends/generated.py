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
on cores with the DSP extension and without MVE (Cortex-M33, M4).

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

GENERATED_FILE = "generated_kernels.cpp"
MODES = ("auto", "library", "generated")

# Operators with a generated form, and what they compute.
POINTWISE_OPS = ("cortex_m::quantized_conv2d.out", "mcu::quantized_conv2d_pointwise_inplace.out")
LINEAR_OPS = ("cortex_m::quantized_linear.out",)
DEPTHWISE_OPS = ("cortex_m::quantized_depthwise_conv2d.out", "mcu::quantized_depthwise_conv2d_inplace.out")
INPLACE_GROUP_BYTES = 4096  # stack for one channel group of an in-place depthwise input (H * W * 4)
GENERATED_OPS = POINTWISE_OPS + LINEAR_OPS + DEPTHWISE_OPS
MAX_K = 14563  # as the portable kernels: |sum| of K products of (int8 + 256) * (int16) stays in int32


def board_supports(board) -> bool:
    """Generated kernels are written for the DSP extension (SMLAD/SXTB16) of cores without MVE
    (Cortex-M33, M4); on the M55, CMSIS-NN's MVE kernels stay (MVE generation: not done)."""
    return bool(getattr(board, "dsp", False)) and not bool(getattr(board, "mve", False))


@dataclass
class GemmLayer:
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

    @property
    def right_shift_only(self) -> bool:
        return fast_requant(self.mults, self.shifts, self.acc_bound())


@dataclass
class ConvLayer(GemmLayer):
    """A convolution (groups 1) run as GEMM rows over gathered windows: k = taps rounded up to 4."""
    geometry: tuple = ()  # (h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow)
    zero_point: int = 0


@dataclass
class DepthwiseLayer:
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

    @property
    def macs(self) -> int:
        return self.oh * self.ow * self.c * 9

    @property
    def weight_bytes(self) -> int:
        return 2 * 9 * self.c

    def acc_bound(self) -> np.ndarray:
        return (np.abs(self.init_table().astype(np.int64)).max(axis=0)
                + 128 * np.abs(self.weights.astype(np.int64)).sum(axis=0))

    @property
    def right_shift_only(self) -> bool:
        return fast_requant(self.mults, self.shifts, self.acc_bound())

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
        return _wrap32(np.array(rows))

    def packed_weights(self) -> np.ndarray:
        """int16: per tap, per group of 4 channels: w[c], w[c+2], w[c+1], w[c+3]."""
        w = self.weights.reshape(9, self.c // 4, 4)[..., [0, 2, 1, 3]]
        return np.ascontiguousarray(w).reshape(-1).astype(np.int16)


@dataclass
class Generated:
    layers: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (instruction, op, reason)
    source: str = ""
    prepare: dict = field(default_factory=dict)  # op -> generated prepare function name

    def report(self) -> dict:
        return {
            "layers": [{"instruction": l.instruction, "op": l.op, "kind": l.kind, "function": l.name,
                        "shape": _shape_text(l), "macs": l.macs, "requant": "fast" if l.right_shift_only else "any",
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


def _round_array(name: str, l) -> str:
    vals = (1 << (-l.shifts.astype(np.int64) - 1)) if l.right_shift_only else np.zeros(len(l.shifts), np.int64)
    return _c_array("int32_t", name, vals, per_line=8)


def _shape_text(l) -> str:
    if l.kind == "conv":
        h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
        return f"{h}x{w}x{cin} -> {oh}x{ow}x{l.n}, kernel {kh}x{kw}, stride {sh},{sw}"
    if l.kind == "depthwise3x3":
        return f"{l.h}x{l.w}x{l.c} -> {l.oh}x{l.ow}, stride {l.stride}"
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
    if (kh, kw) != (1, 1) or list(stride) not in ([1], [1, 1]) or any(int(p) != 0 for p in pad):
        return _conv(program, idx, ins)
    if cin % 4 or cout % 4:
        return f"channels {cin}->{cout} not multiples of 4"
    if cin > MAX_K:
        return "too many input channels"
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
                     n=cout, weights=wt.astype(np.int16), acc_init=_wrap32(init), mults=mults.astype(np.int32),
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
    return ConvLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="conv", rows=oh * ow, k=k, n=cout,
                     weights=wt.astype(np.int16), acc_init=_wrap32(init), mults=mults.astype(np.int32),
                     shifts=shifts.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                     inplace_ok=False, checks=checks, geometry=(h, wd, cin, kh, kw, sh, sw, ph, pw, oh, ow),
                     zero_point=-in_off)


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
                     weights=wt.astype(np.int16), acc_init=_wrap32(init), mults=m.astype(np.int32),
                     shifts=s.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                     inplace_ok=False, checks=checks)


def _depthwise(program: Program, idx: int, ins) -> DepthwiseLayer | str:
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
    if inplace and h * wd * 4 > INPLACE_GROUP_BYTES:
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
    return DepthwiseLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, h=h, w=wd, c=c, oh=oh, ow=ow, stride=s_,
                          pad_h=int(pad[0]), pad_w=int(pad[1]),
                          weights=np.asarray(w.data, np.int64).reshape(9, c).astype(np.int16), bias=b,
                          in_offset=in_off, mults=mults.astype(np.int32), shifts=shifts.astype(np.int32),
                          out_offset=out_off, act_min=act_min, act_max=act_max, checks=checks, inplace_ok=inplace)


def _wrap32(v) -> np.ndarray:
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def eligible(program: Program):
    """(layers, skipped): a GemmLayer for every instruction the generator covers."""
    layers, skipped = [], []
    for idx, ins in enumerate(program.instructions):
        if ins.op in POINTWISE_OPS:
            r = _pointwise(program, idx, ins)
        elif ins.op in LINEAR_OPS:
            r = _linear(program, idx, ins)
        elif ins.op in DEPTHWISE_OPS:
            r = _depthwise(program, idx, ins)

        else:
            continue
        if isinstance(r, str):
            skipped.append((idx, ins.op, r))
        else:
            layers.append(r)
    return layers, skipped


# -- C++ ------------------------------------------------------------------------------------------
PRELUDE = r'''// Generated by mcu-gen (mcu_gen/backends/generated.py): int8 kernels specialized per layer.
//
// Each layer_N() below computes one instruction of this program with its sizes, offsets and
// requantization constants fixed at build time, reading its own copy of the weights: int16,
// pre-widened (w + filter_offset) and reordered into the order its inner loop reads them.
// The kernel table reaches them through a prepare function per operator, which hands an
// instruction its layer_N() only when the instruction is the one the layer was generated for
// (shapes, integer arguments, CRC-32 of every constant tensor); else the library kernel runs.
#include <stdint.h>
#include <string.h>

#include <initializer_list>

#include "int8_common.h"
#include "mcu/crc32.h"
#include "mcu/kernel.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

namespace mcu {
namespace generated {
namespace {

// Two int16 weights in one word, as SMLAD reads them: lo in bits 0..15, hi in 16..31.
constexpr uint32_t pair(int32_t lo, int32_t hi) {
  return static_cast<uint32_t>(static_cast<uint16_t>(lo)) | (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}

// ---------------------------------------------------------------------------
// On cores with the DSP extension the loops below are SMLAD, SXTB16 and loads written as
// inline assembly (so that the register allocation is the one counted in their comments);
// elsewhere (the host tests, cores without DSP) the same instructions as ACLE defines them.
#if !defined(__ARM_FEATURE_DSP)
// SMLAD: acc + lo16(a) * lo16(b) + hi16(a) * hi16(b) (wrapping).
inline int32_t smlad(uint32_t a, uint32_t b, int32_t acc) {
  const int32_t lo = static_cast<int16_t>(a & 0xFFFFu) * static_cast<int16_t>(b & 0xFFFFu);
  const int32_t hi = static_cast<int16_t>(a >> 16) * static_cast<int16_t>(b >> 16);
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(lo) + static_cast<uint32_t>(hi));
}
// SXTB16: bytes 0 and 2 of x, sign-extended into the two halfwords; SXTB16 x, ROR #8: bytes 1 and 3.
inline uint32_t sxtb16(uint32_t x) {
  const uint32_t lo = static_cast<uint16_t>(static_cast<int16_t>(static_cast<int8_t>(x & 0xFFu)));
  const uint32_t hi = static_cast<uint16_t>(static_cast<int16_t>(static_cast<int8_t>((x >> 16) & 0xFFu)));
  return lo | (hi << 16);
}
inline uint32_t sxtb16_ror8(uint32_t x) { return sxtb16((x >> 8) | (x << 24)); }
// SMLABB / SMLATT: acc + lo16(a) * lo16(b), acc + hi16(a) * hi16(b).
inline int32_t smlabb(uint32_t a, uint32_t b, int32_t acc) {
  return static_cast<int32_t>(static_cast<uint32_t>(acc) +
                              static_cast<uint32_t>(static_cast<int16_t>(a & 0xFFFFu) * static_cast<int16_t>(b & 0xFFFFu)));
}
inline int32_t smlatt(uint32_t a, uint32_t b, int32_t acc) {
  return static_cast<int32_t>(static_cast<uint32_t>(acc) +
                              static_cast<uint32_t>(static_cast<int16_t>(a >> 16) * static_cast<int16_t>(b >> 16)));
}
#else
inline uint32_t sxtb16(uint32_t x) { return __sxtb16(x); }
inline uint32_t sxtb16_ror8(uint32_t x) {
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
inline int32_t smlabb(uint32_t a, uint32_t b, int32_t acc) { return __smlabb(a, b, acc); }
inline int32_t smlatt(uint32_t a, uint32_t b, int32_t acc) { return __smlatt(a, b, acc); }
#endif

inline uint32_t load32(const void* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

// Requantization exactly as the library kernels (int8_common.h: CMSIS-NN's arm_nn_requantize,
// evaluated in 64 bits), for any shift.
inline int8_t requant_any(int32_t acc, int32_t mult, int32_t shift, int32_t out_offset, int32_t lo, int32_t hi) {
  return kernels::requantize_to_int8(acc, mult, shift, out_offset, lo, hi);
}

// The same for a right shift of 1..31 (`right`), with `round` = 2^(right - 1), where the
// generator proved that |acc| * mult / 2^31 + round stays below 2^31 for every accumulator the
// layer can produce: then the doubling high multiply fits in 32 bits and the rounding division
// (to nearest, ties away from zero) is one add of `round`, one add of the sign and one shift, so
// this equals requant_any bit for bit. The output range is a template argument: the full int8
// range is a single SSAT.
template <int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
inline int8_t requant_fast(int32_t acc, int32_t mult, int32_t right, int32_t round) {
  const int32_t high = static_cast<int32_t>((static_cast<int64_t>(acc) * mult + (int64_t{1} << 30)) >> 31);
  int32_t r = ((high + round) + (high >> 31)) >> right;
  r += kOutOffset;
#if defined(__ARM_FEATURE_SAT)
  if (kActMin == -128 && kActMax == 127) return static_cast<int8_t>(__ssat(r, 8));
#endif
  r = r < kActMin ? kActMin : r;
  return static_cast<int8_t>(r > kActMax ? kActMax : r);
}

// One group of 4 inputs x[0..3] for 8 (or 4) output channels of one row:
//   a[c] += x[0]*w[c][0] + x[1]*w[c][1] + x[2]*w[c][2] + x[3]*w[c][3]
// `w` points at the group's weight words, per channel the int16 pairs (w[c][0], w[c][2]) and
// (w[c][1], w[c][3]); x advances by 4 bytes, w by 2 words per channel.
// Per 32 MACs: 1 LDR, 2 SXTB16, 8 LDRD, 16 SMLAD.
#if defined(__ARM_FEATURE_DSP)
inline void group_8x1(const int8_t*& x, const uint32_t*& w, int32_t& a0, int32_t& a1, int32_t& a2, int32_t& a3,
                      int32_t& a4, int32_t& a5, int32_t& a6, int32_t& a7) {
  uint32_t x02, x13, w02, w13;
  __asm__ volatile(
      "ldr    %[x13], [%[x]], #4\n\t"
      "sxtb16 %[x02], %[x13]\n\t"
      "sxtb16 %[x13], %[x13], ror #8\n\t"
      "ldrd   %[w02], %[w13], [%[w]], #64\n\t"
      "smlad  %[a0], %[x02], %[w02], %[a0]\n\t"
      "smlad  %[a0], %[x13], %[w13], %[a0]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-56]\n\t"
      "smlad  %[a1], %[x02], %[w02], %[a1]\n\t"
      "smlad  %[a1], %[x13], %[w13], %[a1]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-48]\n\t"
      "smlad  %[a2], %[x02], %[w02], %[a2]\n\t"
      "smlad  %[a2], %[x13], %[w13], %[a2]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-40]\n\t"
      "smlad  %[a3], %[x02], %[w02], %[a3]\n\t"
      "smlad  %[a3], %[x13], %[w13], %[a3]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-32]\n\t"
      "smlad  %[a4], %[x02], %[w02], %[a4]\n\t"
      "smlad  %[a4], %[x13], %[w13], %[a4]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-24]\n\t"
      "smlad  %[a5], %[x02], %[w02], %[a5]\n\t"
      "smlad  %[a5], %[x13], %[w13], %[a5]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-16]\n\t"
      "smlad  %[a6], %[x02], %[w02], %[a6]\n\t"
      "smlad  %[a6], %[x13], %[w13], %[a6]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-8]\n\t"
      "smlad  %[a7], %[x02], %[w02], %[a7]\n\t"
      "smlad  %[a7], %[x13], %[w13], %[a7]\n\t"
      : [x] "+r"(x), [w] "+r"(w), [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [a4] "+r"(a4),
        [a5] "+r"(a5), [a6] "+r"(a6), [a7] "+r"(a7), [x02] "=&r"(x02), [x13] "=&r"(x13), [w02] "=&r"(w02),
        [w13] "=&r"(w13)
      :
      : "memory");
}
inline void group_4x1(const int8_t*& x, const uint32_t*& w, int32_t& a0, int32_t& a1, int32_t& a2, int32_t& a3) {
  uint32_t x02, x13, w02, w13;
  __asm__ volatile(
      "ldr    %[x13], [%[x]], #4\n\t"
      "sxtb16 %[x02], %[x13]\n\t"
      "sxtb16 %[x13], %[x13], ror #8\n\t"
      "ldrd   %[w02], %[w13], [%[w]], #32\n\t"
      "smlad  %[a0], %[x02], %[w02], %[a0]\n\t"
      "smlad  %[a0], %[x13], %[w13], %[a0]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-24]\n\t"
      "smlad  %[a1], %[x02], %[w02], %[a1]\n\t"
      "smlad  %[a1], %[x13], %[w13], %[a1]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-16]\n\t"
      "smlad  %[a2], %[x02], %[w02], %[a2]\n\t"
      "smlad  %[a2], %[x13], %[w13], %[a2]\n\t"
      "ldrd   %[w02], %[w13], [%[w], #-8]\n\t"
      "smlad  %[a3], %[x02], %[w02], %[a3]\n\t"
      "smlad  %[a3], %[x13], %[w13], %[a3]\n\t"
      : [x] "+r"(x), [w] "+r"(w), [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3),
        [x02] "=&r"(x02), [x13] "=&r"(x13), [w02] "=&r"(w02), [w13] "=&r"(w13)
      :
      : "memory");
}
#else
inline void group_4x1(const int8_t*& x, const uint32_t*& w, int32_t& a0, int32_t& a1, int32_t& a2, int32_t& a3) {
  const uint32_t v = load32(x);
  const uint32_t x02 = sxtb16(v), x13 = sxtb16_ror8(v);
  a0 = smlad(x13, w[1], smlad(x02, w[0], a0));
  a1 = smlad(x13, w[3], smlad(x02, w[2], a1));
  a2 = smlad(x13, w[5], smlad(x02, w[4], a2));
  a3 = smlad(x13, w[7], smlad(x02, w[6], a3));
  x += 4;
  w += 8;
}
inline void group_8x1(const int8_t*& x, const uint32_t*& w, int32_t& a0, int32_t& a1, int32_t& a2, int32_t& a3,
                      int32_t& a4, int32_t& a5, int32_t& a6, int32_t& a7) {
  const int8_t* x1 = x;
  group_4x1(x1, w, a0, a1, a2, a3);
  group_4x1(x, w, a4, a5, a6, a7);
}
#endif

// ---------------------------------------------------------------------------
// The GEMM all generated layers share, specialized by its template arguments:
//   out[r][n] = requant(init[n] + sum_k in[r][k] * w[n][k]),  r < kRows, n < kN, k < kK
// Blocks of 8 output channels of one row (a last block of 4 when kN % 8 == 4), the K loop
// unrolled. `weights`: GemmLayer.packed_weights(), per block, per group of 4 inputs, per channel
// the pairs (w[k], w[k+2]) and (w[k+1], w[k+3]). A row is computed into `row` and then copied
// out, so the output may start at the input's address when kN <= kK (in-place pointwise).
struct Requant {
  const int32_t* init;   // bias, kernel sum and input offset folded: the accumulator's start
  const int32_t* mult;
  const int32_t* shift;  // kFast: the right shift (-shift), else the shift
  const int32_t* round;  // kFast: 2^(right - 1), else unused
};

// The output offset and activation range are template arguments (immediates in the code), the
// per-channel constants are read through local pointers: int8 stores may alias anything, and
// locals keep the compiler from reloading the parameters after every store.
template <bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
inline int8_t requant(int32_t acc, const Requant& q, int32_t n) {
  return kFast ? requant_fast<kOutOffset, kActMin, kActMax>(acc, q.mult[n], q.shift[n], q.round[n])
               : requant_any(acc, q.mult[n], q.shift[n], kOutOffset, kActMin, kActMax);
}

// One row: y[n] = requant(init[n] + sum_k x[k] * w[n][k]) for n < kN.
template <int32_t kK, int32_t kN, bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
inline void gemm_row(const int8_t* x_row, int8_t* y, const uint32_t* weights, const Requant& q) {
  static_assert(kK % 4 == 0 && kN % 4 == 0, "the generator emits multiples of 4 only");
  const Requant local = q;
  const auto rq = [local](int32_t acc, int32_t n) { return requant<kFast, kOutOffset, kActMin, kActMax>(acc, local, n); };
  const int32_t* const init = local.init;
  const uint32_t* w = weights;
  int32_t n = 0;
  for (; n + 8 <= kN; n += 8) {
    const int8_t* x = x_row;
    int32_t a0 = init[n], a1 = init[n + 1], a2 = init[n + 2], a3 = init[n + 3];
    int32_t a4 = init[n + 4], a5 = init[n + 5], a6 = init[n + 6], a7 = init[n + 7];
#pragma GCC unroll 32
    for (int32_t k = 0; k < kK; k += 4) group_8x1(x, w, a0, a1, a2, a3, a4, a5, a6, a7);
    y[n] = rq(a0, n);
    y[n + 1] = rq(a1, n + 1);
    y[n + 2] = rq(a2, n + 2);
    y[n + 3] = rq(a3, n + 3);
    y[n + 4] = rq(a4, n + 4);
    y[n + 5] = rq(a5, n + 5);
    y[n + 6] = rq(a6, n + 6);
    y[n + 7] = rq(a7, n + 7);
  }
  if (n < kN) {
    const int8_t* x = x_row;
    int32_t a0 = init[n], a1 = init[n + 1], a2 = init[n + 2], a3 = init[n + 3];
#pragma GCC unroll 32
    for (int32_t k = 0; k < kK; k += 4) group_4x1(x, w, a0, a1, a2, a3);
    y[n] = rq(a0, n);
    y[n + 1] = rq(a1, n + 1);
    y[n + 2] = rq(a2, n + 2);
    y[n + 3] = rq(a3, n + 3);
  }
}

// kRows rows. A row is computed into `row` and then copied out, so the output may start at the
// input's address when kN <= kK (the in-place pointwise variant).
template <int32_t kRows, int32_t kK, int32_t kN, bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
void gemm(const int8_t* in, int8_t* out, const uint32_t* weights, const Requant& q) {
  int8_t row[kN];
  for (int32_t r = 0; r < kRows; ++r) {
    gemm_row<kK, kN, kFast, kOutOffset, kActMin, kActMax>(in + r * kK, row, weights, q);
    memcpy(out + r * kN, row, kN);
  }
}

// gemm_row as a function of its own: the 8x1 block needs 14 registers, which GCC cannot always
// free inside a larger caller (conv_patches: "impossible constraints"), while inlining it into
// gemm's small loop saves ~28 instructions of register moves per block.
template <int32_t kK, int32_t kN, bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
__attribute__((noinline)) void gemm_row_call(const int8_t* x_row, int8_t* y, const uint32_t* weights, const Requant& q) {
  gemm_row<kK, kN, kFast, kOutOffset, kActMin, kActMax>(x_row, y, weights, q);
}

// A convolution (groups 1) as one GEMM row per output pixel: the pixel's window is gathered
// into `patch` in the weights' (ky, kx, c) order, taps outside the input set to the input zero
// point (so that x + input_offset = 0 there, as the folded `init` assumes), and kK - taps
// bytes of zeros that meet zero weights.
template <int32_t kH, int32_t kW, int32_t kCin, int32_t kKH, int32_t kKW, int32_t kSH, int32_t kSW, int32_t kPH,
          int32_t kPW, int32_t kOH, int32_t kOW, int32_t kK, int32_t kN, int8_t kZeroPoint, bool kFast,
          int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
void conv_patches(const int8_t* in, int8_t* out, const uint32_t* weights, const Requant& q) {
  alignas(4) int8_t patch[kK];
  for (int32_t k = kKH * kKW * kCin; k < kK; ++k) patch[k] = 0;
  for (int32_t oy = 0; oy < kOH; ++oy) {
    for (int32_t ox = 0; ox < kOW; ++ox) {
      int8_t* p = patch;
      for (int32_t ky = 0; ky < kKH; ++ky) {
        const int32_t iy = oy * kSH - kPH + ky;
        for (int32_t kx = 0; kx < kKW; ++kx, p += kCin) {
          const int32_t ix = ox * kSW - kPW + kx;
          if (iy < 0 || iy >= kH || ix < 0 || ix >= kW) {
            memset(p, kZeroPoint, kCin);
          } else {
            memcpy(p, in + (iy * kW + ix) * kCin, kCin);
          }
        }
      }
      gemm_row_call<kK, kN, kFast, kOutOffset, kActMin, kActMax>(patch, out + (oy * kOW + ox) * kN, weights, q);
    }
  }
}

// ---------------------------------------------------------------------------
// 3x3 depthwise convolution (depth multiplier 1), NHWC, 4 channels at a time:
//   out[oy][ox][c] = requant(init[class][c] + sum over the taps inside the input of x * w[tap][c])
// `init` holds bias + input_offset * (sum of the weights of the taps inside the input), one row
// of kC per border class (row class of oy x column class of ox; an interior pixel's class has all
// 9 taps), so padding costs nothing in the loop. `weights`: per tap, per group of 4 channels,
// the int16 pairs (w[c], w[c+2]) and (w[c+1], w[c+3]). Per tap and 4 channels: LDR, 2 SXTB16,
// 2 weight loads, 2 SMLABB and 2 SMLATT.
inline void dw_tap(const int8_t* x, const uint32_t* w, int32_t& a0, int32_t& a1, int32_t& a2, int32_t& a3) {
  const uint32_t v = load32(x);
  const uint32_t x02 = sxtb16(v), x13 = sxtb16_ror8(v);
  const uint32_t w02 = w[0], w13 = w[1];
  a0 = smlabb(x02, w02, a0);
  a2 = smlatt(x02, w02, a2);
  a1 = smlabb(x13, w13, a1);
  a3 = smlatt(x13, w13, a3);
}

// kGroups groups of 4 channels (c0 .. c0 + 4 * kGroups - 1) of the whole output, pixel by pixel.
// `src` points at channel c0 of pixel 0 of the input, whose pixels are kXS bytes apart (kC: the
// input itself; 4: a copy of one group). The border class and the taps inside the input are
// worked out once per pixel, for all its groups.
template <int32_t kH, int32_t kW, int32_t kC, int32_t kOH, int32_t kOW, int32_t kStride, int32_t kPadH, int32_t kPadW,
          int32_t kXS, int32_t kGroups, bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
inline void depthwise3x3_groups(const int8_t* src, int8_t* out, int32_t c0, const uint32_t* weights, const int32_t* init,
                                const uint8_t* row_class, const uint8_t* col_class, int32_t col_classes,
                                const Requant& q) {
  constexpr int32_t kTapWords = kC / 2;  // weight words per tap
  const Requant local = q;
  const auto rq = [local](int32_t acc, int32_t n) { return requant<kFast, kOutOffset, kActMin, kActMax>(acc, local, n); };
  for (int32_t oy = 0; oy < kOH; ++oy) {
    const int32_t iy0 = oy * kStride - kPadH;
    const int32_t ky0 = iy0 < 0 ? -iy0 : 0;
    const int32_t ky1 = kH - iy0 < 3 ? kH - iy0 : 3;
    for (int32_t ox = 0; ox < kOW; ++ox) {
      const int32_t ix0 = ox * kStride - kPadW;
      const int32_t kx0 = ix0 < 0 ? -ix0 : 0;
      const int32_t kx1 = kW - ix0 < 3 ? kW - ix0 : 3;
      const int32_t* start = init + (row_class[oy] * col_classes + col_class[ox]) * kC + c0;
      const bool interior = ky0 == 0 && ky1 == 3 && kx0 == 0 && kx1 == 3;
      const int32_t base = (iy0 * kW + ix0) * kXS;  // tap (0, 0)'s offset, possibly outside the input
      int8_t* y = out + (oy * kOW + ox) * kC + c0;
      for (int32_t g = 0; g < kGroups; ++g) {
        const int32_t c = c0 + 4 * g;
        const uint32_t* w = weights + c / 2;
        int32_t a0 = start[4 * g], a1 = start[4 * g + 1], a2 = start[4 * g + 2], a3 = start[4 * g + 3];
        if (interior) {  // 9 taps at constant offsets
#pragma GCC unroll 3
          for (int32_t ky = 0; ky < 3; ++ky) {
#pragma GCC unroll 3
            for (int32_t kx = 0; kx < 3; ++kx) {
              dw_tap(src + (base + (ky * kW + kx) * kXS + 4 * g), w + (ky * 3 + kx) * kTapWords, a0, a1, a2, a3);
            }
          }
        } else {
          for (int32_t ky = ky0; ky < ky1; ++ky) {
            for (int32_t kx = kx0; kx < kx1; ++kx) {
              dw_tap(src + (base + (ky * kW + kx) * kXS + 4 * g), w + (ky * 3 + kx) * kTapWords, a0, a1, a2, a3);
            }
          }
        }
        y[4 * g] = rq(a0, c);
        y[4 * g + 1] = rq(a1, c + 1);
        y[4 * g + 2] = rq(a2, c + 2);
        y[4 * g + 3] = rq(a3, c + 3);
      }
    }
  }
}

// The output beside the input: channel groups straight from the input.
template <int32_t kH, int32_t kW, int32_t kC, int32_t kOH, int32_t kOW, int32_t kStride, int32_t kPadH, int32_t kPadW,
          bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
void depthwise3x3(const int8_t* in, int8_t* out, const uint32_t* weights, const int32_t* init, const uint8_t* row_class,
                  const uint8_t* col_class, int32_t col_classes, const Requant& q) {
  static_assert(kC % 4 == 0, "the generator emits multiples of 4 only");
  depthwise3x3_groups<kH, kW, kC, kOH, kOW, kStride, kPadH, kPadW, kC, kC / 4, kFast, kOutOffset, kActMin, kActMax>(
      in, out, 0, weights, init, row_class, col_class, col_classes, q);
}

// The output over the input (mcu::quantized_depthwise_conv2d_inplace): each group of 4 channels
// is first copied out of the input (4 bytes per pixel, on the stack), then computed from the copy;
// its outputs land only on that group's input bytes (the output has no more pixels than the input).
template <int32_t kH, int32_t kW, int32_t kC, int32_t kOH, int32_t kOW, int32_t kStride, int32_t kPadH, int32_t kPadW,
          bool kFast, int32_t kOutOffset, int32_t kActMin, int32_t kActMax>
void depthwise3x3_inplace(const int8_t* in, int8_t* out, const uint32_t* weights, const int32_t* init,
                          const uint8_t* row_class, const uint8_t* col_class, int32_t col_classes, const Requant& q) {
  static_assert(kC % 4 == 0 && kOH * kOW <= kH * kW, "the generator emits these only");
  alignas(4) int8_t group[kH * kW * 4];
  for (int32_t c = 0; c < kC; c += 4) {
    for (int32_t p = 0; p < kH * kW; ++p) memcpy(group + 4 * p, in + p * kC + c, 4);
    depthwise3x3_groups<kH, kW, kC, kOH, kOW, kStride, kPadH, kPadW, 4, 1, kFast, kOutOffset, kActMin, kActMax>(
        group, out, c, weights, init, row_class, col_class, col_classes, q);
  }
}

// ---------------------------------------------------------------------------
// Load-time checks: is this instruction the one a layer was generated for?
inline bool tensor_is(const KernelContext& ctx, int32_t i, DType dtype, std::initializer_list<int32_t> sizes,
                      std::initializer_list<uint8_t> order) {
  const DecodedValue& v = ctx.decoded(i);
  if (v.tag != DecodedValue::kTensor || v.dtype != dtype || v.dim != static_cast<uint8_t>(sizes.size())) return false;
  int32_t d = 0;
  for (int32_t s : sizes) if (v.sizes[d++] != s) return false;
  d = 0;
  for (uint8_t o : order) if (v.dim_order[d++] != o) return false;
  return true;
}
inline bool constant_is(const KernelContext& ctx, int32_t i, uint32_t nbytes, uint32_t crc) {
  const DecodedValue& v = ctx.decoded(i);
  const uint32_t size = v.dtype == DType::Int32 ? 4u * static_cast<uint32_t>(v.numel) : static_cast<uint32_t>(v.numel);
  return v.tag == DecodedValue::kTensor && size == nbytes &&
         crc32(static_cast<const uint8_t*>(v.data), nbytes) == crc;
}
inline bool int_is(const KernelContext& ctx, int32_t i, int64_t value) { return ctx.int_arg(i) == value; }
inline bool list_is(const KernelContext& ctx, int32_t i, std::initializer_list<int64_t> items) {
  const IntList l = ctx.int_list(i);
  if (l.size() != static_cast<int32_t>(items.size())) return false;
  int32_t k = 0;
  for (int64_t v : items) if (l[k++] != v) return false;
  return true;
}
// The output either does not overlap the input or starts at its address (in-place pointwise).
inline bool output_allowed(const KernelContext& ctx, int32_t in, int32_t out, bool inplace_ok) {
  const DecodedValue& x = ctx.decoded(in);
  const DecodedValue& y = ctx.decoded(out);
  const uint8_t* xb = static_cast<const uint8_t*>(x.data);
  const uint8_t* yb = static_cast<const uint8_t*>(y.data);
  if (yb + y.numel <= xb || xb + x.numel <= yb) return true;
  return inplace_ok && xb == yb;
}

}  // namespace
'''


def _c_array(ctype: str, name: str, values, per_line: int = 16, align: int = 0) -> str:
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
           _c_array("int32_t", f"{pre}Init", l.acc_init, per_line=8),
           _c_array("int32_t", f"{pre}Mult", l.mults, per_line=8),
           (_c_array("int32_t", f"{pre}Shift", -l.shifts.astype(np.int64), per_line=16) if l.right_shift_only
            else _c_array("int32_t", f"{pre}Shift", l.shifts, per_line=16)),
           _round_array(f"{pre}Round", l),
           f"const Requant {pre}Requant = {{{pre}Init, {pre}Mult, {pre}Shift, {pre}Round}};",
           "",
           f"bool {l.name}_matches(const KernelContext& ctx) {{",
           "  return " + " &&\n         ".join(l.checks + [f"output_allowed(ctx, {in_arg}, {out_arg}, {str(l.inplace_ok).lower()})"]) + ";",
           "}",
           "}  // namespace",
           "",
           f"void {l.name}_compute(const int8_t* in, int8_t* out) {{",
           (f"  conv_patches<{', '.join(str(g) for g in l.geometry)}, {l.k}, {l.n}, {l.zero_point}, "
            f"{str(l.right_shift_only).lower()}, {l.out_offset}, {l.act_min}, {l.act_max}>"
            f"(in, out, {pre}Weights, {pre}Requant);" if l.kind == "conv" else
            f"  gemm<{l.rows}, {l.k}, {l.n}, {str(l.right_shift_only).lower()}, {l.out_offset}, {l.act_min}, {l.act_max}>"
            f"(in, out, {pre}Weights, {pre}Requant);"),
           "}",
           "",
           f"Error {l.name}(const KernelContext& ctx) {{",
           f"  {l.name}_compute(static_cast<const int8_t*>(ctx.decoded_data({in_arg})),",
           f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data({out_arg}))));",
           "  return Error::Ok;",
           "}",
           ""]
    return "\n".join(out)


def _dw_layer_source(l: DepthwiseLayer) -> str:
    pre = f"k{l.name.title().replace('_', '')}"
    rc, cc, ru, cu = l.classes()
    out = [f"// ---------------------------------------------------------------------------",
           f"// {l.name}: instruction {l.instruction} ({l.op}), 3x3 depthwise, {l.c} channels, "
           f"{l.h}x{l.w} -> {l.oh}x{l.ow}, stride {l.stride}, padding {l.pad_h},{l.pad_w}; {l.macs:,} MACs.",
           "namespace {",
           f"// Weights as int16 pairs (lo, hi) in the order the loop reads them: {l.weight_bytes:,} bytes.",
           _pairs(f"{pre}Weights", l.packed_weights()),
           f"// Accumulator start per border class (taps inside the input: rows {ru}, columns {cu}).",
           _c_array("int32_t", f"{pre}Init", l.init_table(), per_line=8),
           _c_array("uint8_t", f"{pre}RowClass", rc, per_line=32),
           _c_array("uint8_t", f"{pre}ColClass", cc, per_line=32),
           _c_array("int32_t", f"{pre}Mult", l.mults, per_line=8),
           (_c_array("int32_t", f"{pre}Shift", -l.shifts.astype(np.int64), per_line=16) if l.right_shift_only
            else _c_array("int32_t", f"{pre}Shift", l.shifts, per_line=16)),
           _round_array(f"{pre}Round", l),
           f"const Requant {pre}Requant = {{{pre}Init, {pre}Mult, {pre}Shift, {pre}Round}};",
           "",
           f"bool {l.name}_matches(const KernelContext& ctx) {{",
           "  return " + " &&\n         ".join(l.checks + [f"output_allowed(ctx, 0, 14, {str(l.inplace_ok).lower()})"]) + ";",
           "}",
           "}  // namespace",
           "",
           f"void {l.name}_compute(const int8_t* in, int8_t* out) {{",
           f"  depthwise3x3{'_inplace' if l.inplace_ok else ''}<{l.h}, {l.w}, {l.c}, {l.oh}, {l.ow}, {l.stride}, {l.pad_h}, {l.pad_w}, "
           f"{str(l.right_shift_only).lower()}, {l.out_offset}, {l.act_min}, {l.act_max}>"
           f"(in, out, {pre}Weights, {pre}Init, {pre}RowClass, {pre}ColClass, {len(cu)}, "
           f"{pre}Requant);",
           "}",
           "",
           f"Error {l.name}(const KernelContext& ctx) {{",
           f"  {l.name}_compute(static_cast<const int8_t*>(ctx.decoded_data(0)),",
           f"                 static_cast<int8_t*>(const_cast<void*>(ctx.decoded_data(14))));",
           "  return Error::Ok;",
           "}",
           ""]
    return "\n".join(out)


_IO_ARGS = {"pointwise": (0, 13), "conv": (0, 13), "linear": (0, 11)}


def _slug(op: str) -> str:
    return op.replace("::", "_").replace(".", "_")


def generate(program: Program, kernels) -> Generated:
    """The generated layers for this program and the C++ file that holds them. ``kernels``: the
    selected library kernels (their fn/prepare are the fallback of each generated prepare)."""
    layers, skipped = eligible(program)
    g = Generated(layers=layers, skipped=skipped)
    if not layers:
        return g
    by_op = {k.op: k for k in kernels}
    parts = [PRELUDE]
    for l in layers:
        parts.append(_dw_layer_source(l) if l.kind == "depthwise3x3" else _layer_source(l, _IO_ARGS[l.kind]))
    parts.append("}  // namespace generated\n\nnamespace kernels {")
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
                f"KernelFn {name}(const KernelContext& ctx) {{",
                "  if (ctx.all_decoded()) {"]
        for l in layers:
            if l.op == op:
                body.append(f"    if (generated::{l.name}_matches(ctx)) return &generated::{l.name};")
        body += ["  }", f"  return {fallback};", "}", ""]
        parts.append("\n".join(body))
    parts.append("}  // namespace kernels\n}  // namespace mcu\n")
    g.source = "\n".join(parts)
    return g


def hooked_kernels(kernels, g: Generated):
    """The selection with each generated operator's entry given its generated prepare function."""
    from dataclasses import replace

    return [replace(k, prepare=g.prepare[k.op]) if k.op in g.prepare else k for k in kernels]
