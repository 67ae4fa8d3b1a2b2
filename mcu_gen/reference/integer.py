"""Host integer reference of an int8 Program: what the device must reproduce bit for bit.

    outputs = run_int8_reference(program, inputs)   # numpy arrays, logical (PyTorch) layout

Every ``cortex_m::`` operator is computed here with numpy integer arithmetic, following
ExecuTorch 1.5's Python reference implementations (backends/cortex_m/ops/operators.py)
and CMSIS-NN's requantization (arm_nn_requantize: Q31 doubling high multiply, then a
rounding right shift). Every tensor lives in its own buffer (never the memory plan), in its
memory order (dim_order), exactly as on the device; fp32 fallback operators are run by
mcu_gen.reference (torch ops), or as the target's fp32 kernels compute them where they differ
(fp32_emulation.py).
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from mcu_gen.plan import inplace_pass
from mcu_gen.program.ir import CODE_DTYPES, Program, ScalarValue, TensorValue
from mcu_gen.reference.fp32_emulation import EMULATED
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
    """In-place variants the in-place pass may swap in (kernel registry ``variant_of``): op -> base op."""
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
    return inplace_pass.plan_memory(copy.deepcopy(program))


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
