"""Which instructions the generator takes: a matcher per operator reads an instruction's tensors and
constant arguments and returns its layer (layers.py), with the load-time checks (C++ expressions)
that find the same instruction again in the firmware, or the reason it stays on the library kernel."""
from __future__ import annotations

import zlib

import numpy as np

from mcu_gen.backends.generated.dsp_depthwise_asm import DW_ODD_STACK_BYTES, MAX_DW_TAPS, dw_cols, dw_plane
from mcu_gen.backends.generated.exactness import wrap32
from mcu_gen.backends.generated.layers import (ADD_OPS, ADD_TABLE_STACK_BYTES, CONV_ROWS_INPLACE, CONV_SCRATCH_ARG,
                                               DEPTHWISE_OPS, INPLACE_GROUP_BYTES, LINEAR_OPS, MAX_K, PADDED_STACK_BYTES,
                                               POINTWISE_OPS, AddLayer,
                                               ConvLayer, DepthwiseLayer, GemmLayer, conv_ring_rows)
from mcu_gen.program.ir import Program, ScalarValue, TensorValue


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
    dtype = {"int8": "DType::Int8", "uint8": "DType::UInt8", "int32": "DType::Int32"}[t.dtype]
    return f"tensor_is(ctx, {arg}, {dtype}, {{{sizes}}}, {{{order}}})"


def _constant_check(arg: int, t: TensorValue) -> str:
    return f"constant_is(ctx, {arg}, {t.nbytes}u, 0x{_crc(t.data):08x}u)"


def _int_check(arg: int, v: int) -> str:
    return f"int_is(ctx, {arg}, {int(v)})"


def _list_check(arg: int, items) -> str:
    return f"list_is(ctx, {arg}, {{{', '.join(str(int(v)) for v in items)}}})"


def _scratch_room(program: Program, i: int) -> int:
    """The bytes of a convolution's scratch tensor (argument 12) a generated layer may use for its per-call
    buffers (dsp_work.work_plan): a planned 1-D int8/uint8 tensor's, else none."""
    t = _t(program, i)
    if t is None or t.is_constant or t.dtype not in ("int8", "uint8") or len(t.shape) != 1:
        return 0
    return int(t.nbytes)


def _scratch_checks(program: Program, i: int) -> list:
    """The load-time checks of a scratch tensor a generated layer keeps its buffers in: its shape and dtype (its
    planned place: the layer's `bound`), apart from the input and output."""
    t = _t(program, i)
    if not _scratch_room(program, i):
        return []
    return [_tensor_check(12, t), "apart(ctx, 12, 0)", "apart(ctx, 12, 13)"]


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


# A grouped convolution (groups other than 1 and the channel count) of at most this many groups runs as the dense
# one whose weight is block-diagonal (zeros between the groups: the same accumulators, bit-exact): groups times the
# MACs and weights, on kernels many times faster than the portable grouped loop (a window run of C / groups values
# per tap: ResNeXt's 4-group 3x3 layers took about 20 estimated M33 cycles a MAC there).
MAX_DENSE_GROUPS = 4


def dense_weight(w, cin: int) -> np.ndarray:
    """The OHWI weight w of a convolution over cin input channels in w.shape[3] channels a group, as the dense [O, KH,
    KW, cin] weight with zeros outside each group's block (int64)."""
    cout, kh, kw, cin_g = (int(s) for s in w.shape)
    wt = np.asarray(w.data, np.int64).reshape(cout, kh, kw, cin_g)
    groups = cin // cin_g
    if groups == 1:
        return wt
    dense = np.zeros((cout, kh, kw, cin), np.int64)
    cout_g = cout // groups
    for g in range(groups):
        dense[g * cout_g:(g + 1) * cout_g, :, :, g * cin_g:(g + 1) * cin_g] = wt[g * cout_g:(g + 1) * cout_g]
    return dense


def _pointwise(program: Program, idx: int, ins, isa: str = "dsp") -> GemmLayer | str:
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
    groups = cin // cin_g if 0 < cin_g <= cin and cin % cin_g == 0 else 0
    if groups < 1 or cout % groups:
        return "grouped convolution"
    if groups > MAX_DENSE_GROUPS:
        return f"grouped convolution of more than {MAX_DENSE_GROUPS} groups"
    stride, pad, dil = _s(program, a[3]), _s(program, a[4]), _s(program, a[5])
    if any(int(d) != 1 for d in dil):
        return "dilation"
    if ((kh, kw) != (1, 1) or list(stride) not in ([1], [1, 1]) or any(int(p) != 0 for p in pad)
            or ins.op == CONV_ROWS_INPLACE):
        return _conv(program, idx, ins, isa)
    if isa == "dsp" and cin % 4 and ins.op == POINTWISE_OPS[0]:
        return _conv(program, idx, ins, isa)  # the convolution's windows pad K to a multiple of 4
    # DSP: N rounded up to 4 (_narrow); in place, K not a multiple of 4: rows copied into rows of K rounded up
    # (gemm_stream_padded; the in-place order compares the real N and K). MVE: a predicated last chunk of K and store of N
    narrow, padded = (cout % 4, cin % 4) if isa == "dsp" else (0, 0)
    too_deep = _padded_refusal(cin, cout) if padded else None
    if too_deep:
        return f"channels {cin}->{cout} in place: input channels not a multiple of 4, and a {too_deep}"
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
    wt = dense_weight(w, cin).reshape(cout, cin)
    init = wt.sum(axis=1) * in_off + (np.asarray(bias.data, np.int64).reshape(-1) if bias is not None else 0)
    checks = [_tensor_check(0, x), _tensor_check(1, w), _constant_check(1, w), _tensor_check(13, out),
              _constant_check(8, mt), _constant_check(9, st),
              _list_check(3, stride), _list_check(4, pad), _list_check(5, dil),
              _int_check(6, in_off), _int_check(7, out_off), _int_check(10, act_min),
              _int_check(11, act_max)]
    checks.append(_constant_check(2, bias) if bias is not None else "ctx.is_none(2)")
    layer = GemmLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="pointwise", rows=n_ * h * wd, k=cin,
                      n=cout, weights=wt.astype(np.int16), acc_init=wrap32(init), mults=mults.astype(np.int32),
                      shifts=shifts.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                      inplace_ok=cout <= cin or ins.op != POINTWISE_OPS[0], checks=checks,
                      scratch_room=_scratch_room(program, a[12]), scratch_checks=_scratch_checks(program, a[12]))
    layer = _pad_k(layer) if padded else layer
    return _narrow(layer) if narrow else layer


def _padded_refusal(k: int, n: int) -> str | None:
    """Where a DSP layer's rows of K not a multiple of 4 go through a stack buffer of rows of K rounded up (_pad_k):
    what its padded row and (N not a multiple of 4: _narrow) output row take past PADDED_STACK_BYTES, else None."""
    row, out_row = k + -k % 4, (n + -n % 4 if n % 4 else 0)
    if row + out_row <= PADDED_STACK_BYTES:
        return None
    return (f"padded row ({row} B)" + (f" and output row ({out_row} B)" if out_row else "")
            + f" take more than {PADDED_STACK_BYTES} B of stack")


def _pad_k(l: GemmLayer) -> GemmLayer:
    """A DSP GEMM layer whose K is not a multiple of 4 as one of K rounded up (zero weights past K, the accumulator
    starts unchanged; ``k_in`` the real K): its rows are copied into rows of that length, zero past K
    (gemm_stream_padded, gemm's kKIn: kernels_generated/dsp_prelude.h), in the in-place order of the real N and K."""
    pad = -l.k % 4
    l.weights = np.concatenate([l.weights, np.zeros((l.n, pad), l.weights.dtype)], axis=1)
    l.k_in, l.k = l.k, l.k + pad
    return l


def _narrow(l: GemmLayer) -> GemmLayer:
    """A DSP GEMM layer whose N is not a multiple of 4 as one of N rounded up (zero weights and accumulator
    starts, the last channel's requantization): the GEMM writes rows of that many channels into a buffer and the
    layer copies the first N of each to the output (gemm_stream_rows, gemm's kNOut, conv_stream's: in
    kernels_generated/dsp_prelude.h). In place as the layer was: the copies go where rows of N would go, in the
    same order (the in-place 1x1 order compares N with K, both rounded the same way when K % 4 == 0)."""
    n, pad = l.n, -l.n % 4
    l.weights = np.concatenate([l.weights, np.zeros((pad, l.k), l.weights.dtype)])
    l.acc_init = np.concatenate([l.acc_init, np.zeros(pad, l.acc_init.dtype)])
    l.mults = np.concatenate([l.mults, np.repeat(l.mults[-1:], pad)])
    l.shifts = np.concatenate([l.shifts, np.repeat(l.shifts[-1:], pad)])
    l.n, l.n_out = n + pad, n
    return l


def _conv(program: Program, idx: int, ins, isa: str = "dsp") -> ConvLayer | str:
    a = ins.args
    x, w, out = _t(program, a[0]), _t(program, a[1]), _t(program, a[13])
    cout, kh, kw, _ = (int(s) for s in w.shape)
    n_, cin, h, wd = (int(s) for s in x.shape)
    stride = [int(v) for v in _s(program, a[3])]
    pad = [int(v) for v in _s(program, a[4])]
    sh, sw = (stride * 2)[:2] if len(stride) == 1 else stride
    ph, pw = (pad * 2)[:2] if len(pad) == 1 else pad
    if n_ != 1 or ph >= kh or pw >= kw:
        return "batch > 1 or padding >= kernel"
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
    wt[:, :taps] = dense_weight(w, cin).reshape(cout, taps)
    init = wt.sum(axis=1) * in_off + (np.asarray(bias.data, np.int64).reshape(-1) if bias is not None else 0)
    checks = [_tensor_check(0, x), _tensor_check(1, w), _constant_check(1, w), _tensor_check(13, out),
              _constant_check(8, mt), _constant_check(9, st),
              _list_check(3, _s(program, a[3])), _list_check(4, _s(program, a[4])),
              _list_check(5, _s(program, a[5])), _int_check(6, in_off), _int_check(7, out_off),
              _int_check(10, act_min), _int_check(11, act_max)]
    checks.append(_constant_check(2, bias) if bias is not None else "ctx.is_none(2)")
    ring_rows, room, at = 0, _scratch_room(program, a[CONV_SCRATCH_ARG]), 0
    if ins.op == CONV_ROWS_INPLACE:  # the ring of saved input rows: the variant's scratch tensor (then the room)
        scratch = _t(program, a[CONV_SCRATCH_ARG])
        row = wd * cin
        if scratch is None or scratch.dtype != "int8" or len(scratch.shape) != 1 or scratch.nbytes < row:
            return "in place without a scratch of at least one input row"
        if sh != (stride * 2)[0] or n_ != 1:
            return "in place with unequal strides"
        ring_rows = min(scratch.nbytes // row, conv_ring_rows(h, wd * cin, oh, ow * cout, sh, ph))
        at = (ring_rows * row + 3) // 4 * 4
        room = max(0, scratch.nbytes - at)
        checks += [_tensor_check(12, scratch), "apart(ctx, 12, 0)", "apart(ctx, 12, 13)"]
    layer = ConvLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="conv", rows=oh * ow, k=k, n=cout,
                      weights=wt.astype(np.int16), acc_init=wrap32(init), mults=mults.astype(np.int32),
                      shifts=shifts.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                      inplace_ok=bool(ring_rows), checks=checks,
                      geometry=(h, wd, cin, kh, kw, sh, sw, ph, pw, oh, ow), zero_point=-in_off, ring_rows=ring_rows,
                      scratch_room=room, scratch_at=at, scratch_checks=_scratch_checks(program, a[CONV_SCRATCH_ARG]))
    return _narrow(layer) if isa == "dsp" and cout % 4 else layer


def _linear(program: Program, idx: int, ins, isa: str = "dsp") -> GemmLayer | str:
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
    padded = isa == "dsp" and k % 4  # MVE: a predicated last chunk of K (and store of N)
    too_deep = _padded_refusal(k, n) if padded else None
    if too_deep:
        return f"sizes {k}->{n}: K not a multiple of 4, and its {too_deep}"
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
    layer = GemmLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, kind="linear", rows=rows, k=k, n=n,
                      weights=wt.astype(np.int16), acc_init=wrap32(init), mults=m.astype(np.int32),
                      shifts=s.astype(np.int32), out_offset=out_off, act_min=act_min, act_max=act_max,
                      inplace_ok=False, checks=checks)
    layer = _pad_k(layer) if padded else layer
    return _narrow(layer) if isa == "dsp" and n % 4 else layer


def _depthwise(program: Program, idx: int, ins, isa: str = "dsp") -> DepthwiseLayer | str:
    """``isa``: "dsp" (emit_dsp.py: any kernel of up to MAX_DW_TAPS taps and padding under its size, any strides; an
    in-place layer copies the input rows of a channel group to a window in the variant's scratch (H * W bytes), or kh
    rows of W * 4 bytes on the stack; channels not a multiple of 4: the planar paths, else at least 4 channels, the
    last c % 4 a group of their own) or "mve" (generated_mve.py: the same kernels, one stride (or one output row), any
    channel count; a ring of kh padded rows in the in-place variant's scratch or on the stack)."""
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
    if one != 1 or cout != c:
        return "depth multiplier other than 1"
    if kh * kw > MAX_DW_TAPS:
        return f"a {kh}x{kw} kernel (more than {MAX_DW_TAPS} taps)"
    stride, pad, dil = list(_s(program, a[3])), list(_s(program, a[4])), list(_s(program, a[5]))
    stride = stride * 2 if len(stride) == 1 else stride
    pad = pad * 2 if len(pad) == 1 else pad
    if len(stride) != 2 or len(pad) != 2 or len(dil) > 2:
        return "stride, padding or dilation not of one or two values"
    sh, sw = int(stride[0]), int(stride[1])
    if sh < 1 or sw < 1:
        return "a stride under 1"
    if any(int(d) != 1 for d in dil) or int(_s(program, a[6])) != 1:
        return "dilation or depth multiplier"
    if n_ != 1:
        return "batch > 1"
    if not (0 <= int(pad[0]) < kh and 0 <= int(pad[1]) < kw):
        return "padding of a kernel's size or more"
    oh, ow = (h + 2 * int(pad[0]) - kh) // sh + 1, (wd + 2 * int(pad[1]) - kw) // sw + 1
    if oh == 1:  # one output row (a Conv1d's (1, s)): its row stride is never used
        sh = sw
    if sh != sw and isa != "dsp":
        return "unequal strides"
    s_ = sh
    if tuple(out.shape) != (1, c, oh, ow):
        return "unexpected output shape"
    inplace = ins.op != "cortex_m::quantized_depthwise_conv2d.out"
    if inplace and ow > wd:  # the windows / rings read input row oy + 1 after output row oy is written
        return f"in place with output rows longer than input rows ({ow} > {wd} pixels: padding over half the kernel)"
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
    layer = DepthwiseLayer(name=f"layer_{idx}", instruction=idx, op=ins.op, h=h, w=wd, c=c, oh=oh, ow=ow, stride=s_,
                           pad_h=int(pad[0]), pad_w=int(pad[1]), kh=kh, kw=kw, stride_w=sw if sw != sh else 0,
                           weights=np.asarray(w.data, np.int64).reshape(kh * kw, c).astype(np.int16), bias=b,
                           in_offset=in_off, mults=mults.astype(np.int32), shifts=shifts.astype(np.int32),
                           out_offset=out_off, act_min=act_min, act_max=act_max, checks=checks, inplace_ok=inplace,
                           scratch_bytes=scratch_bytes)
    if isa == "dsp" and c % 4 and dw_plane(layer) is None:  # the NHWC path, the last c % 4 channels a group (tail)
        if c < 4:  # its word of the pixel's last four channels would start before the pixel
            return (f"{c} channels (fewer than 4, which the NHWC path reads as one word) and no planar path (3x3, "
                    f"strides 1 or 2, padding <= 1, three int16 rows of {wd} pixels in {DW_ODD_STACK_BYTES} bytes)")
        layer.tail = c % 4
    window = kh * wd * 4  # an in-place NHWC layer's window of kh rows (dw_window), unless over one row in chunks
    if (isa == "dsp" and inplace and (c % 4 == 0 or layer.tail) and scratch_bytes < window
            and window > INPLACE_GROUP_BYTES and not dw_cols(layer)):
        return f"in place with a window of {window} bytes (> {INPLACE_GROUP_BYTES} of stack and the scratch)"
    return layer


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


def covers(program: Program, idx: int, op: str, isa: str = "dsp") -> bool:
    """Whether the generator takes instruction ``idx`` if it were operator ``op`` (same arguments)."""
    from dataclasses import replace

    ins = replace(program.instructions[idx], op=op)
    if op in DEPTHWISE_OPS:
        return not isinstance(_depthwise(program, idx, ins, isa), str)
    if op in ADD_OPS:
        return not isinstance(_add(program, idx, ins), str)
    match = _pointwise if op in POINTWISE_OPS else _linear if op in LINEAR_OPS else None
    return match is not None and not isinstance(match(program, idx, ins, isa), str)


def eligible(program: Program, isa: str = "dsp"):
    """(layers, skipped): a GemmLayer for every instruction the generator covers."""
    layers, skipped = [], []
    for idx, ins in enumerate(program.instructions):
        if ins.op in POINTWISE_OPS:
            r = _pointwise(program, idx, ins, isa)
        elif ins.op in LINEAR_OPS:
            r = _linear(program, idx, ins, isa)
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
    if any(ins.op in ADD_OPS for ins in program.instructions):
        for l in layers:  # the add's library kernel (the generated adds' fallback) is in the image
            l.stack_room = ADD_TABLE_STACK_BYTES
    return layers, skipped


def left_out(layers: list, skipped: list, leave=None) -> tuple:
    """(layers, skipped) with the instructions of ``leave`` ({instruction: reason}) moved to skipped."""
    if not leave:
        return layers, skipped
    return ([l for l in layers if l.instruction not in leave],
            skipped + [(l.instruction, l.op, leave[l.instruction]) for l in layers if l.instruction in leave])
