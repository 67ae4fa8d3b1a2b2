"""Host integer reference of an int8 Program: what the device must reproduce bit for bit.

    outputs = run_int8_reference(program, inputs)   # numpy arrays, logical (PyTorch) layout

Every ``cortex_m::`` operator is computed here with numpy integer arithmetic, following
ExecuTorch 1.5's Python reference implementations (backends/cortex_m/ops/operators.py)
and CMSIS-NN's requantization (arm_nn_requantize: Q31 doubling high multiply, then a
rounding right shift). Every tensor lives in its own buffer (never the memory plan), in its
memory order (dim_order), exactly as on the device; fp32 fallback operators are run by
mcu_gen.reference (torch ops).
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from mcu_gen.plan import planner
from mcu_gen.program.ir import CODE_DTYPES, Program, ScalarValue, TensorValue
from mcu_gen.reference.interpreter import ReferenceError, ReferenceUnsupported, execute_portable, Memory, interpret
from mcu_gen.quantize.arith import (SHIFT_INT8, dequantize_f32, quantize_f32, quantized_add,  # noqa: F401
                                    requantize)  # (used here and re-exported)


# -- arithmetic ---------------------------------------------------------------------------------------
def _conv_acc(x: np.ndarray, w_oihw: np.ndarray, stride, padding, dilation, groups: int) -> np.ndarray:
    """int64 accumulators of a grouped 2-D convolution; x [N,C,H,W] (offset already added)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w_oihw.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), np.int64)
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow), np.int64)
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        wg = w_oihw[g * og:(g + 1) * og].astype(np.int64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    return out


def _requant_channels(acc, mults, shifts, axis=1) -> np.ndarray:
    out = np.empty_like(acc)
    for c in range(acc.shape[axis]):
        idx = [slice(None)] * acc.ndim
        idx[axis] = c
        out[tuple(idx)] = requantize(acc[tuple(idx)], int(mults[c]), int(shifts[c]))
    return out


# -- operators ----------------------------------------------------------------------------------------
def quantized_conv2d(x, weight_ohwi, bias, stride, padding, dilation, input_offset, output_offset, mults, shifts,
                     act_min, act_max):
    w = np.asarray(weight_ohwi).transpose(0, 3, 1, 2)
    groups = x.shape[1] // w.shape[1]
    acc = _conv_acc(x.astype(np.int64) + input_offset, w, stride, padding, dilation, groups)
    if bias is not None:
        acc += np.asarray(bias, np.int64).reshape(1, -1, 1, 1)
    y = _requant_channels(acc, mults, shifts) + output_offset
    return np.clip(y, act_min, act_max).astype(np.int8)


def quantized_depthwise_conv2d(x, weight_ihwo, bias, stride, padding, dilation, depth_multiplier, input_offset,
                               output_offset, mults, shifts, act_min, act_max):
    w = np.asarray(weight_ihwo).transpose(3, 0, 1, 2)  # IHWO -> OIHW [O,1,kh,kw]
    acc = _conv_acc(x.astype(np.int64) + input_offset, w, stride, padding, dilation, x.shape[1])
    if bias is not None:
        acc += np.asarray(bias, np.int64).reshape(1, -1, 1, 1)
    y = _requant_channels(acc, mults, shifts) + output_offset
    return np.clip(y, act_min, act_max).astype(np.int8)


def quantized_linear(x, weights, bias, kernel_sum, input_offset, filter_offset, output_offset, mults, shifts,
                     act_max, act_min):
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).astype(np.int64)
    w = np.asarray(weights, np.int64)
    if kernel_sum is not None:
        acc = x2 @ w.T + x2.sum(axis=1, keepdims=True) * filter_offset + np.asarray(kernel_sum, np.int64)
    else:
        acc = (x2 + input_offset) @ (w + filter_offset).T
        if bias is not None:
            acc = acc + np.asarray(bias, np.int64)
    y = requantize(acc, int(mults[0]), int(shifts[0])) + output_offset
    return np.clip(y, act_min, act_max).astype(np.int8).reshape(*lead, w.shape[0])


def quantized_mul(a, a_zp, b, b_zp, out_zp, out_mult, out_shift):
    y = requantize((a.astype(np.int64) - a_zp) * (b.astype(np.int64) - b_zp), out_mult, out_shift) + out_zp
    return np.clip(y, -128, 127).astype(np.int8)


def quantized_batch_matmul(lhs, lhs_off, rhs_t, rhs_off, out_zp, mult, shift):
    """lhs [B, M, K], rhs_t [B, N, K]; the "zero points" are offsets (added), exact int64 sums."""
    acc = np.einsum("bmk,bnk->bmn", lhs.astype(np.int64) + lhs_off, rhs_t.astype(np.int64) + rhs_off)
    y = requantize(acc, mult, shift) + out_zp
    return np.clip(y, -128, 127).astype(np.int8)


def quantized_transpose_conv2d(x, weight_ohwi, bias, stride, padding, output_padding, dilation, input_offset,
                               output_offset, mults, shifts, act_min, act_max, out_shape):
    """Transposed convolution (groups 1), exact int64 sums: input pixel (iy, ix) with tap (i, j)
    adds to output (iy * s - p + i * d, ix * s - p + j * d)."""
    n, c, h, w = x.shape
    o, kh, kw, _ = weight_ohwi.shape
    wt = np.asarray(weight_ohwi, np.int64)
    xo = x.astype(np.int64) + input_offset
    _, _, oh, ow = out_shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    acc = np.zeros((n, o, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            contrib = np.einsum("nchw,oc->nohw", xo, wt[:, i, j, :])
            for iy in range(h):
                y = iy * sh - ph + i * dh
                if not 0 <= y < oh:
                    continue
                for ix in range(w):
                    xx = ix * sw - pw + j * dw
                    if 0 <= xx < ow:
                        acc[:, :, y, xx] += contrib[:, :, iy, ix]
    if bias is not None:
        acc += np.asarray(bias, np.int64).reshape(1, -1, 1, 1)
    y = _requant_channels(acc, mults, shifts) + output_offset
    return np.clip(y, act_min, act_max).astype(np.int8)


def upsample_nearest_int8(x, out_h: int, out_w: int) -> np.ndarray:
    """The kernel's (and PyTorch's) nearest index: min(floor(dst * (float)in / out), in - 1)."""
    def idx(n_in, n_out):
        if n_in == n_out:
            return np.arange(n_out)
        scale = np.float32(n_in) / np.float32(n_out)
        return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * scale).astype(np.int64), n_in - 1)

    return x[:, :, idx(x.shape[2], out_h)][:, :, :, idx(x.shape[3], out_w)]


def _pool_out(n, k, p, s, ceil_mode) -> int:
    """ATen's pooling output size (the last window must start inside the input or left padding)."""
    out = (n + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_windows(x, kernel, stride, padding, fill, ceil_mode=False):
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = stride
    ph, pw = padding
    oh, ow = _pool_out(h, kh, ph, sh, ceil_mode), _pool_out(w, kw, pw, sw, ceil_mode)
    eh = max(0, (oh - 1) * sh + kh - (h + 2 * ph))  # ceil mode: windows past the end
    ew = max(0, (ow - 1) * sw + kw - (w + 2 * pw))
    xp = np.full((n, c, h + 2 * ph + eh, w + 2 * pw + ew), fill, np.int64)
    xp[:, :, ph:ph + h, pw:pw + w] = x
    valid = np.zeros(xp.shape[2:], np.int64)
    valid[ph:ph + h, pw:pw + w] = 1
    wins, counts = [], []
    for i in range(kh):
        for j in range(kw):
            wins.append(xp[:, :, i: i + sh * (oh - 1) + 1: sh, j: j + sw * (ow - 1) + 1: sw])
            counts.append(valid[i: i + sh * (oh - 1) + 1: sh, j: j + sw * (ow - 1) + 1: sw])
    return np.stack(wins), np.stack(counts)


def quantized_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, in_zp, out_zp, act_min, act_max):
    if list(dilation) != [1, 1] or ceil_mode:
        raise ReferenceUnsupported("quantized_max_pool2d: dilation 1 and ceil_mode False only")
    if in_zp != out_zp:
        raise ReferenceUnsupported("quantized_max_pool2d: input and output zero points differ")
    wins, _ = _pool_windows(x, kernel, stride, padding, -(1 << 40))
    return np.clip(wins.max(axis=0), act_min, act_max).astype(np.int8)


def quantized_avg_pool2d(x, kernel, stride, padding, ceil_mode, zero_point, multiplier, shift):
    """As CMSIS-NN's arm_avgpool_s8 (and both device kernels): the int32 sum of the raw int8
    values over the taps inside the input (padding not counted), divided by their count with
    C division after adding half the count away from zero (ties away from zero), clamped to
    int8. Input and output share scale and zero point, so zero_point/multiplier/shift are not
    needed. (ExecuTorch's float reference rounds exact .5 means to even instead.) ceil_mode: the
    windows past the end count only their taps inside the input, as the kernels do."""
    del zero_point, multiplier, shift
    wins, counts = _pool_windows(x, kernel, stride, padding, 0, bool(ceil_mode))
    total = np.zeros(wins.shape[1:], np.int64)
    for tap, valid in zip(wins, counts):
        total += np.where(valid.astype(bool), tap.astype(np.int64), 0)
    cnt = counts.sum(axis=0).astype(np.int64)
    half = cnt // 2
    q = np.where(total > 0, (total + half) // cnt, -((-total + half) // cnt))
    return np.clip(q, -128, 127).astype(np.int8)


def softmax(x, dim, in_zp, out_zp, in_mult, in_shift, diff_min):
    """ExecuTorch's reference: float softmax of the dequantized input, output scale 1/256, zp -128."""
    real = float(in_mult) / float(1 << 31) * 2.0 ** in_shift
    scale = real / float(1 << 26)
    xf = torch.from_numpy((x.astype(np.int32) - int(in_zp)).astype(np.float32)) * scale
    probs = torch.softmax(xf, dim=dim)
    q = torch.round(probs / (1.0 / 256.0)) + int(out_zp)
    return q.clamp(-128, 127).to(torch.int8).numpy()


# -- interpreter --------------------------------------------------------------------------------------
class _Args:
    def __init__(self, mem: Memory, args, nhwc: bool = False):
        self.mem, self.args = mem, args
        self.p = mem.program
        self.nhwc = nhwc  # a *_nhwc op: its activation (argument 0) is logically NHWC

    def t(self, k):
        v = self.p.values[self.args[k]]
        if isinstance(v, ScalarValue) and v.kind == "none":
            return None
        x = self.mem.tensor(self.args[k]).numpy()
        return x.transpose(0, 3, 1, 2) if self.nhwc and k == 0 else x

    def s(self, k):
        v = self.p.values[self.args[k]]
        if not isinstance(v, ScalarValue):
            raise ReferenceError(f"argument {k} is a tensor, expected a scalar")
        return v.value


def _q_args(a: _Args, k=1):
    return float(a.s(k)), int(a.s(k + 1)), int(a.s(k + 2)), int(a.s(k + 3)), CODE_DTYPES[int(a.s(k + 4))]


def _variants() -> dict:
    """In-place variants the planner may swap in (kernel registry ``variant_of``): op -> base op."""
    if not hasattr(_variants, "table"):
        from mcu_gen.backends.kernels import find_kernels

        _variants.table = {k.op: k.variant_of for k in find_kernels().values() if getattr(k, "variant_of", "")}
    return _variants.table


def is_int8_op(op: str) -> bool:
    return op.startswith("cortex_m::") or op in _variants()


def _run_cortex_m(mem: Memory, ins) -> None:
    """Runs a cortex_m:: op, or an in-place variant of one (same arguments, same result)."""
    op = _variants().get(ins.op, ins.op)
    name = op.split("::", 1)[1].rsplit(".", 1)[0]
    # The *_nhwc forms compute what the plain ones do on logically NHWC tensors.
    nhwc = name.endswith("_nhwc")
    name = name[: -len("_nhwc")] if nhwc else name
    a = _Args(mem, ins.args, nhwc)
    out = ins.args[-1]
    if name == "quantize_per_tensor":
        scale, zp, lo, hi, _ = _q_args(a)
        y = quantize_f32(a.t(0), scale, zp, lo, hi)
    elif name == "dequantize_per_tensor":
        scale, zp, *_ = _q_args(a)
        y = dequantize_f32(a.t(0), scale, zp)
    elif name == "quantized_conv2d":
        y = quantized_conv2d(a.t(0), a.t(1), a.t(2), a.s(3), a.s(4), a.s(5), a.s(6), a.s(7), a.t(8), a.t(9),
                             a.s(10), a.s(11))
    elif name == "quantized_depthwise_conv2d":
        y = quantized_depthwise_conv2d(a.t(0), a.t(1), a.t(2), a.s(3), a.s(4), a.s(5), a.s(6), a.s(7), a.s(8),
                                       a.t(9), a.t(10), a.s(11), a.s(12))
    elif name == "quantized_linear":
        y = quantized_linear(a.t(0), a.t(1), a.t(2), a.t(3), a.s(4), a.s(5), a.s(6), a.s(7), a.s(8), a.s(9),
                             a.s(10))
    elif name == "quantized_add":
        y = quantized_add(a.t(0), a.s(1), a.s(2), a.s(3), a.t(4), a.s(5), a.s(6), a.s(7), a.s(8), a.s(9), a.s(10),
                          a.s(11), a.s(12))
    elif name == "quantized_mul":
        y = quantized_mul(a.t(0), a.s(1), a.t(2), a.s(3), a.s(4), a.s(5), a.s(6))
    elif name == "quantized_max_pool2d":
        y = quantized_max_pool2d(a.t(0), a.s(1), a.s(2), a.s(3), a.s(4), a.s(5), a.s(6), a.s(7), a.s(8), a.s(9))
    elif name == "quantized_avg_pool2d":
        y = quantized_avg_pool2d(a.t(0), a.s(1), a.s(2), a.s(3), a.s(4), a.s(5), a.s(6), a.s(7))
    elif name == "quantized_batch_matmul":
        y = quantized_batch_matmul(a.t(0), a.s(1), a.t(2), a.s(3), a.s(4), a.s(5), a.s(6))
    elif name == "quantized_transpose_conv2d":
        shape = mem.program.tensor(out).shape
        if nhwc:
            shape = (shape[0], shape[3], shape[1], shape[2])
        y = quantized_transpose_conv2d(a.t(0), a.t(1), a.t(2), a.s(3), a.s(4), a.s(5), a.s(6), a.s(7), a.s(8),
                                       a.t(9), a.t(10), a.s(11), a.s(12), shape)
    elif name == "quantized_activation":
        y = np.asarray(a.t(1), np.int8)[a.t(0).astype(np.int64) + 128]
    elif name == "softmax":
        y = softmax(a.t(0), a.s(1), a.s(2), a.s(3), a.s(4), a.s(5), a.s(6))
    elif name == "transpose":
        y = np.asarray(a.t(0).transpose(a.s(1)), order="C")
    elif name == "pad":
        x = a.t(0)
        pre, post, value = list(a.s(1)), list(a.s(2)), a.s(3)
        t = mem.program.tensor(ins.args[0])
        if x.ndim == 4 and (t.dim_order == (0, 2, 3, 1) or x.shape[1] == 1 or x.shape[2] * x.shape[3] == 1):
            # channels-last: the pads are in (N, H, W, C) order (as the kernels read them)
            pre, post = [pre[0], pre[3], pre[1], pre[2]], [post[0], post[3], post[1], post[2]]
        off = 4 - x.ndim
        y = np.pad(x, [(pre[off + i], post[off + i]) for i in range(x.ndim)], constant_values=value)
    else:
        raise ReferenceUnsupported(f"{ins.op}: not in the int8 reference")
    if nhwc:
        y = y.transpose(0, 2, 3, 1)
    mem.write(out, torch.from_numpy(np.asarray(y, order="C")))


def planned(program: Program) -> Program:
    """The program itself when every activation has an arena offset, else a planned copy."""
    acts = [v for v in program.values if isinstance(v, TensorValue) and not v.is_constant]
    if acts and all(v.offset is not None for v in acts):
        return program
    return planner.plan(copy.deepcopy(program))


# -- fp32 islands: kernels emulated operation for operation ------------------------------------------
# An fp32 island's operators run on the target's fp32 kernels; where a kernel's float32 arithmetic
# differs from torch's (summation order), the reference repeats the kernel's order here, so that
# the quantize after the island sees the same float and the program stays bit-exact.
def _f32(x):
    return np.asarray(x, np.float32)


def native_layer_norm_f32(x, n: int, weight, bias, eps: float):
    """kernels_portable/op_native_layer_norm.cpp: sequential float32 sums over rows of n."""
    rows = x.reshape(-1, n).astype(np.float32)
    inv_n = np.float32(1.0) / np.float32(n)
    total = np.zeros(rows.shape[0], np.float32)
    for i in range(n):
        total = total + rows[:, i]
    mean = total * inv_n
    sq = np.zeros(rows.shape[0], np.float32)
    for i in range(n):
        c = rows[:, i] - mean
        sq = sq + c * c
    rstd = np.float32(1.0) / np.sqrt(sq * inv_n + np.float32(eps))
    y = (rows - mean[:, None]) * rstd[:, None]
    if weight is not None:
        y = y * _f32(weight).reshape(1, n)
    if bias is not None:
        y = y + _f32(bias).reshape(1, n)
    return y.reshape(x.shape), mean, rstd


def _emulated_layer_norm(mem: Memory, ins) -> None:
    p = mem.program
    x = mem.tensor(ins.args[0]).numpy()
    shape = p.values[ins.args[1]].value
    n = int(np.prod(shape))

    def opt(k):
        v = p.values[ins.args[k]]
        return None if isinstance(v, ScalarValue) else mem.tensor(ins.args[k]).numpy()

    y, mean, rstd = native_layer_norm_f32(x, n, opt(2), opt(3), float(p.values[ins.args[4]].value))
    for index, val in zip(ins.args[5:8], (y, mean, rstd)):
        mem.write(index, torch.from_numpy(np.asarray(val.reshape(p.tensor(index).shape), order="C")))


def _libm():
    import ctypes
    import ctypes.util

    if not hasattr(_libm, "lib"):
        lib = ctypes.CDLL(ctypes.util.find_library("m"))
        for name in ("expf", "logf") + tuple(LIBM_UNARY.values()):
            getattr(lib, name).restype = ctypes.c_float
            getattr(lib, name).argtypes = [ctypes.c_float]
        lib.powf.restype = ctypes.c_float
        lib.powf.argtypes = [ctypes.c_float, ctypes.c_float]
        _libm.lib = lib
    return _libm.lib


def log_softmax_f32(x: np.ndarray, dim: int) -> np.ndarray:
    """kernels_portable/op_log_softmax.cpp: max, a sequential float32 sum of expf(x - max), logf,
    (x - max) - log_sum; expf/logf from the C library (the same correctly-rounded-in-practice
    algorithms as newlib's)."""
    lib = _libm()
    xm = np.moveaxis(x.astype(np.float32), dim, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        mx = row.max()
        total = np.float32(0.0)
        for v in row:
            total = np.float32(total + np.float32(lib.expf(float(np.float32(v - mx)))))
        log_sum = np.float32(lib.logf(float(total)))
        out[r] = (row - mx) - log_sum
    return np.moveaxis(out.reshape(xm.shape), -1, dim)


def softmax_f32(x: np.ndarray, dim: int) -> np.ndarray:
    """kernels_portable/op_softmax.cpp: e = expf(x - max) with a sequential float32 sum, then
    e * (1 / sum)."""
    lib = _libm()
    xm = np.moveaxis(x.astype(np.float32), dim, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        mx = row.max()
        e = np.array([lib.expf(float(np.float32(v - mx))) for v in row], np.float32)
        total = np.float32(0.0)
        for v in e:
            total = np.float32(total + v)
        out[r] = e * (np.float32(1.0) / total)
    return np.moveaxis(out.reshape(xm.shape), -1, dim)


def _emulated_softmax(fn):
    def run(mem: Memory, ins) -> None:
        x = mem.tensor(ins.args[0]).numpy()
        dim = int(mem.program.values[ins.args[1]].value) % x.ndim
        mem.write(ins.args[3], torch.from_numpy(np.asarray(fn(x, dim), order="C")))

    return run


def _reduced_rows(x: np.ndarray, dims) -> np.ndarray:
    """x as rows of the reduced elements, in the order reduce_common.h walks them (the reduced dims in
    row-major order; dims None or []: all). A 0-dim x is one row of one element (any dim reduces it)."""
    if x.ndim == 0:
        return x.reshape(1, 1)
    dims = sorted({int(d) % max(x.ndim, 1) for d in dims}) if dims else list(range(x.ndim))
    keep = [d for d in range(x.ndim) if d not in dims]
    return np.transpose(x, keep + dims).reshape(-1, int(np.prod([x.shape[d] for d in dims], dtype=np.int64)))


def _seq_sum(rows: np.ndarray) -> np.ndarray:
    """Per row, a sequential float32 sum (a kernel's `s += x`)."""
    total = np.zeros(rows.shape[0], np.float32)
    for i in range(rows.shape[1]):
        total = total + rows[:, i]
    return total


def _scalar(mem: Memory, index: int):
    return mem.program.values[index].value


def _emulated_var(mem: Memory, ins) -> None:
    """reduce_common.h reduce_var: sequential float32 sums, mean = s / n, then sum of (x - mean)^2."""
    x = mem.tensor(ins.args[0]).numpy().astype(np.float32)
    rows = _reduced_rows(x, _scalar(mem, ins.args[1]))
    n = np.float32(rows.shape[1])
    corr = _scalar(mem, ins.args[2])
    corr = np.float32(1.0 if corr is None else corr)
    denom = n - corr if n - corr > 0 else np.float32(0.0)
    with np.errstate(all="ignore"):
        mean = _seq_sum(rows) / n
        d = rows - mean[:, None]
        var = _seq_sum(d * d) / denom
    outs = [ins.args[4]] + ([ins.args[5]] if ins.op == "aten::var_mean.correction_out" else [])
    for index, val in zip(outs, (var, mean)):
        mem.write(index, torch.from_numpy(np.asarray(val.reshape(mem.program.tensor(index).shape), order="C")))


def _emulated_vector_norm(mem: Memory, ins) -> None:
    """op_linalg_vector_norm.cpp, finite ord: sequential float32 sums; ord 2: sqrtf of the sum of x * x,
    1: of |x|, 0: of x != 0, else powf(sum of powf(|x|, p), 1.0f / p). (inf: max/min, exact: torch's.)"""
    x = mem.tensor(ins.args[0]).numpy()
    ord_ = float(_scalar(mem, ins.args[1]))
    if x.dtype != np.float32 or not np.isfinite(ord_) or (ord_ == 0.0 and np.isnan(x).any()):
        execute_portable(mem, ins)
        return
    rows = _reduced_rows(x, _scalar(mem, ins.args[2]))
    with np.errstate(all="ignore"):
        if ord_ == 2.0:
            y = np.sqrt(_seq_sum(rows * rows))
        elif ord_ == 1.0:
            y = _seq_sum(np.abs(rows))
        elif ord_ == 0.0:
            y = _seq_sum((rows != 0).astype(np.float32))
        else:
            lib, p = _libm(), np.float32(ord_)
            powered = np.array([lib.powf(float(v), float(p)) for v in np.abs(rows).reshape(-1)],
                               np.float32).reshape(rows.shape)
            inv = float(np.float32(1.0) / p)
            y = np.array([lib.powf(float(v), inv) for v in _seq_sum(powered)], np.float32)
    mem.write(ins.args[5], torch.from_numpy(np.asarray(y.reshape(mem.program.tensor(ins.args[5]).shape), order="C")))


def _emulated_addmm(mem: Memory, ins) -> None:
    """op_addmm.cpp: f32_matrix.h matmul_f32 (row r of out += a[r, t] * b[t, :], t in order), then
    alpha * that (unless alpha is 1) + beta * self (unless beta is 0), in float32."""
    s, a, b = (mem.tensor(ins.args[k]).numpy() for k in range(3))
    out = ins.args[5]
    if not all(t.dtype == np.float32 for t in (s, a, b)) or a.ndim != 2 or b.ndim != 2:
        execute_portable(mem, ins)
        return
    beta, alpha = np.float32(_scalar(mem, ins.args[3])), np.float32(_scalar(mem, ins.args[4]))
    with np.errstate(all="ignore"):
        o = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for t in range(a.shape[1]):
            o = o + a[:, t:t + 1] * b[t:t + 1, :]
        if alpha != 1.0:
            o = alpha * o
        if beta != 0.0:
            o = o + beta * np.broadcast_to(s, o.shape)
    mem.write(out, torch.from_numpy(np.asarray(o, np.float32, order="C")))


def _emulated_group_norm(mem: Memory, ins) -> None:
    """op_native_group_norm.cpp: per (sample, group) sequential float32 sums, mean = sum * (1 / count),
    rstd = 1 / sqrtf(var + eps), y = x * (rstd * w) + (b - mean * rstd * w)."""
    p = mem.program
    x = mem.tensor(ins.args[0]).numpy()
    n, c, hw, groups = (int(_scalar(mem, ins.args[k])) for k in (3, 4, 5, 6))
    if x.dtype != np.float32 or groups <= 0 or c % groups or n * c * hw != x.size or c * hw == 0:
        execute_portable(mem, ins)
        return

    def param(k):
        return None if isinstance(p.values[ins.args[k]], ScalarValue) else mem.tensor(ins.args[k]).numpy()

    weight, bias = param(1), param(2)
    per_group = c // groups
    rows = x.reshape(n * groups, per_group * hw).astype(np.float32)
    inv = np.float32(1.0) / np.float32(per_group * hw)
    eps = np.float32(_scalar(mem, ins.args[7]))
    with np.errstate(all="ignore"):
        mean = _seq_sum(rows) * inv
        d = rows - mean[:, None]
        rstd = np.float32(1.0) / np.sqrt(_seq_sum(d * d) * inv + eps)
        w = np.ones(c, np.float32) if weight is None else _f32(weight).reshape(c)
        b = np.zeros(c, np.float32) if bias is None else _f32(bias).reshape(c)
        scale = rstd.reshape(n, groups, 1) * w.reshape(1, groups, per_group)  # [n, groups, per_group]
        shift = b.reshape(1, groups, per_group) - mean.reshape(n, groups, 1) * scale
        y = x.reshape(n, groups, per_group, hw) * scale[..., None] + shift[..., None]
    for index, val in zip(ins.args[8:11], (y, mean, rstd)):
        mem.write(index, torch.from_numpy(np.asarray(val, np.float32).reshape(p.tensor(index).shape).copy()))


def _emulated_sum(mem: Memory, ins) -> None:
    """op_sum.cpp in float32: a sequential float32 sum over dim (None or []: all dims)."""
    x = mem.tensor(ins.args[0]).numpy()
    out = ins.args[4]
    if x.dtype != np.float32 or mem.program.tensor(out).dtype != "float32":
        execute_portable(mem, ins)
        return
    with np.errstate(all="ignore"):
        y = _seq_sum(_reduced_rows(x, _scalar(mem, ins.args[1])))
    mem.write(out, torch.from_numpy(np.asarray(y.reshape(mem.program.tensor(out).shape), order="C")))


def _emulated_cumsum(mem: Memory, ins) -> None:
    """op_cumsum.cpp in float32: a running float32 sum along dim."""
    x = mem.tensor(ins.args[0]).numpy()
    out = ins.args[3]
    if x.dtype != np.float32 or mem.program.tensor(out).dtype != "float32" or x.ndim == 0:
        execute_portable(mem, ins)
        return
    xm = np.moveaxis(x, int(_scalar(mem, ins.args[1])) % x.ndim, -1)
    y = np.empty_like(xm)
    s = np.zeros(xm.shape[:-1], np.float32)
    for i in range(xm.shape[-1]):
        s = s + xm[..., i]
        y[..., i] = s
    y = np.moveaxis(y, -1, int(_scalar(mem, ins.args[1])) % x.ndim)
    mem.write(out, torch.from_numpy(np.asarray(y, order="C")))


def _emulated_logit(mem: Memory, ins) -> None:
    """op_logit.cpp: logf(z / (1 - z)), z clamped to [eps, 1 - eps] when eps is given."""
    x = mem.tensor(ins.args[0]).numpy()
    if x.dtype != np.float32 or mem.program.tensor(ins.args[2]).dtype != "float32":
        execute_portable(mem, ins)
        return
    eps = _scalar(mem, ins.args[1])
    z = x
    if eps is not None:
        lo = np.float32(eps)
        hi = np.float32(1.0) - lo
        z = np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(np.float32)
    with np.errstate(all="ignore"):
        q = (z / (np.float32(1.0) - z)).astype(np.float32)
    lib = _libm()
    y = np.array([lib.logf(float(v)) for v in q.reshape(-1)], np.float32).reshape(x.shape)
    mem.write(ins.args[2], torch.from_numpy(np.asarray(y, order="C")))


# fp32 kernels that are one C library call per element (kernels_portable/op_<name>.cpp: unary_to_float
# with asinf(x), ...): the same call here, not torch's (vectorized) implementation, which differs in the
# last bits.
LIBM_UNARY = {f"aten::{name}.out": f"{name}f" for name in (
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "exp", "expm1", "log", "log10",
    "log1p", "log2", "sin", "sinh", "sqrt", "tan")}


def _emulated_libm_unary(mem: Memory, ins) -> None:
    x = mem.tensor(ins.args[0]).numpy()
    if x.dtype != np.float32 or mem.program.tensor(ins.args[1]).dtype != "float32":
        execute_portable(mem, ins)
        return
    fn = getattr(_libm(), LIBM_UNARY[ins.op])
    y = np.array([fn(float(v)) for v in x.reshape(-1)], np.float32).reshape(x.shape)
    mem.write(ins.args[1], torch.from_numpy(np.asarray(y, order="C")))


EMULATED = {**{op: _emulated_libm_unary for op in LIBM_UNARY},
            "aten::var.correction_out": _emulated_var, "aten::var_mean.correction_out": _emulated_var,
            "aten::linalg_vector_norm.out": _emulated_vector_norm, "aten::cumsum.out": _emulated_cumsum,
            "aten::sum.IntList_out": _emulated_sum, "aten::addmm.out": _emulated_addmm,
            "aten::native_group_norm.out": _emulated_group_norm,
            "aten::logit.out": _emulated_logit,
            "aten::native_layer_norm.out": _emulated_layer_norm,
            "aten::_log_softmax.out": _emulated_softmax(log_softmax_f32),
            "aten::_softmax.out": _emulated_softmax(softmax_f32)}


def execute_instruction(mem: Memory, ins) -> None:
    """One instruction of an int8 program: cortex_m:: ops (and their in-place variants) in
    integer arithmetic, anything else (fp32 fallback ops) on the torch-op interpreter."""
    if ins.op == "aten::upsample_nearest2d.vec_out" and mem.program.tensor(ins.args[0]).dtype == "int8":
        out = ins.args[-1]
        shape = mem.program.tensor(out).shape
        y = upsample_nearest_int8(mem.tensor(ins.args[0]).numpy(), shape[2], shape[3])
        mem.write(out, torch.from_numpy(np.asarray(y, order="C")))
        return
    if ins.op in EMULATED:
        EMULATED[ins.op](mem, ins)
        return
    (_run_cortex_m if is_int8_op(ins.op) else execute_portable)(mem, ins)


def run_int8_reference(program: Program, inputs, state: dict | None = None) -> list:
    """Run ``program`` on ``inputs`` (numpy arrays in logical layout, one per program input), every
    tensor in its own buffer; ``state`` as in interpreter.interpret."""
    return interpret(program, inputs, execute_instruction, state=state)[0]
