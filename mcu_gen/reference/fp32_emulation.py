"""The fp32 islands of an int8 program, as the target's fp32 kernels compute them: where a kernel's
float32 arithmetic differs from torch's (summation order, one libm call), the int8 reference
(integer.py's execute_instruction) runs that kernel's order here, so that the quantize after the
island sees the same float and the program stays bit-exact. ``EMULATED``: out-variant -> function
(mem, instruction)."""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.program.ir import ScalarValue
from mcu_gen.reference import recurrent_f32
from mcu_gen.reference.c_libm import LIBM_UNARY, libm
from mcu_gen.reference.interpreter import Memory, execute_portable


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


def _along_rows(x: np.ndarray, dim: int, fn) -> np.ndarray:
    """fn(rows) over x's float32 rows along dim, put back in x's layout."""
    xm = np.moveaxis(x.astype(np.float32), dim, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    return np.moveaxis(fn(rows).reshape(xm.shape), -1, dim)


def _shifted_exp(rows: np.ndarray) -> tuple:
    """(rows - each row's max, expf of that) with the C library's expf, as softmax_common.h's rows."""
    lib = libm()
    shifted = rows - rows.max(axis=1, keepdims=True)
    e = np.array([[lib.expf(float(v)) for v in row] for row in shifted], np.float32).reshape(rows.shape)
    return shifted, e


def log_softmax_f32(x: np.ndarray, dim: int) -> np.ndarray:
    """kernels_portable/op_log_softmax.cpp: max, a sequential float32 sum of expf(x - max), logf,
    (x - max) - log_sum; expf/logf from the C library (the same correctly-rounded-in-practice
    algorithms as newlib's)."""
    lib = libm()

    def rows_out(rows):
        shifted, e = _shifted_exp(rows)
        log_sum = np.array([lib.logf(float(t)) for t in _seq_sum(e)], np.float32)
        return shifted - log_sum[:, None]

    return _along_rows(x, dim, rows_out)


def softmax_f32(x: np.ndarray, dim: int) -> np.ndarray:
    """kernels_portable/op_softmax.cpp: e = expf(x - max) with a sequential float32 sum, then
    e * (1 / sum)."""

    def rows_out(rows):
        _, e = _shifted_exp(rows)
        return e * (np.float32(1.0) / _seq_sum(e))[:, None]

    return _along_rows(x, dim, rows_out)


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
            lib, p = libm(), np.float32(ord_)
            powered = np.array([lib.powf(float(v), float(p)) for v in np.abs(rows).reshape(-1)],
                               np.float32).reshape(rows.shape)
            inv = float(np.float32(1.0) / p)
            y = np.array([lib.powf(float(v), inv) for v in _seq_sum(powered)], np.float32)
    mem.write(ins.args[5], torch.from_numpy(np.asarray(y.reshape(mem.program.tensor(ins.args[5]).shape), order="C")))


def matmul_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """f32_matrix.h matmul_f32 over the last two dims (bmm: per batch matrix): out[..., r, :] = sum over t, in
    order, of a[..., r, t] * b[..., t, :] (float32, no contraction)."""
    o = np.zeros(a.shape[:-1] + b.shape[-1:], np.float32)
    for t in range(a.shape[-1]):
        o = o + a[..., t:t + 1] * b[..., t:t + 1, :]
    return o


def _emulated_matmul(mem: Memory, ins) -> None:
    """op_mm.cpp / op_bmm.cpp on float32: matmul_f32 (per batch matrix). PyTorch's own order (blocked, vectorized)
    differs in the last bits: a bmm's float output (an einsum's) was a MISMATCH in an int8 program's run."""
    a, b = (mem.tensor(ins.args[k]).numpy() for k in range(2))
    if a.dtype != np.float32 or b.dtype != np.float32 or a.ndim != b.ndim or a.ndim not in (2, 3):
        execute_portable(mem, ins)
        return
    with np.errstate(all="ignore"):
        o = matmul_f32(a, b)
    mem.write(ins.args[2], torch.from_numpy(np.asarray(o, np.float32, order="C")))


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
        o = matmul_f32(a, b)
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


def _emulated_mean_all(mem: Memory, ins) -> None:
    """op_mean_dtype.cpp (reduce_common.h reduce_mean_f32): every element as float32, a sequential sum, s / n."""
    x, out = mem.tensor(ins.args[0]).numpy(), ins.args[2]
    if mem.program.tensor(out).dtype != "float32" or x.dtype == np.float64:
        execute_portable(mem, ins)
        return
    rows = _reduced_rows(x.astype(np.float32), None)
    with np.errstate(all="ignore"):
        y = _seq_sum(rows) / np.float32(rows.shape[1])
    mem.write(out, torch.from_numpy(np.asarray(y.reshape(()), order="C")))


def _emulated_mean(mem: Memory, ins) -> None:
    """op_mean.cpp in float32: reduced dims that are one adjacent block ending at the last dim, four partial sums
    (s0 + s1) + (s2 + s3) over each contiguous run, then / count; otherwise a sequential sum in input order, then
    * (1 / count)."""
    x, out = mem.tensor(ins.args[0]).numpy(), ins.args[4]
    dims = _scalar(mem, ins.args[1])
    if x.dtype != np.float32 or mem.program.tensor(out).dtype != "float32" or x.ndim == 0:
        execute_portable(mem, ins)
        return
    reduced = sorted({int(d) % x.ndim for d in dims}) if dims else list(range(x.ndim))
    count = np.float32(np.prod([x.shape[d] for d in reduced], dtype=np.int64))
    rows = _reduced_rows(x, reduced)
    adjacent = reduced == list(range(reduced[0], reduced[-1] + 1))
    with np.errstate(all="ignore"):
        if adjacent and reduced[-1] == x.ndim - 1:  # inner == 1: sum_f32's four partial sums
            n = rows.shape[1]
            whole = n - n % 4
            parts = [_seq_sum(rows[:, k:whole:4]) for k in range(4)]
            parts[0] = _seq_sum(np.concatenate([parts[0][:, None], rows[:, whole:]], axis=1))
            y = ((parts[0] + parts[1]) + (parts[2] + parts[3])) / count
        else:
            y = _seq_sum(rows) * (np.float32(1.0) / count)
    mem.write(out, torch.from_numpy(np.asarray(y.reshape(mem.program.tensor(out).shape), order="C")))


def _emulated_prod(mem: Memory, ins) -> None:
    """reduce_common.h reduce_prod in float32: a sequential product over the reduced elements (prod.out: all)."""
    x, out = mem.tensor(ins.args[0]).numpy(), ins.args[-2]
    if mem.program.tensor(out).dtype != "float32" or x.dtype == np.float64:
        execute_portable(mem, ins)
        return
    dims = [int(_scalar(mem, ins.args[1]))] if ins.op == "aten::prod.int_out" else None
    rows = _reduced_rows(x.astype(np.float32), dims)
    y = np.ones(rows.shape[0], np.float32)
    with np.errstate(all="ignore"):
        for i in range(rows.shape[1]):
            y = y * rows[:, i]
    mem.write(out, torch.from_numpy(np.asarray(y.reshape(mem.program.tensor(out).shape), order="C")))


def _running(step, first):
    """A scan kernel in float32 along dim (op_cumsum.cpp, op_cumprod.cpp, op_logcumsumexp.cpp): acc = step(acc, x)
    from `first`, element by element (ATen keeps cumprod's and logcumsumexp's running value in double)."""
    def emulated(mem: Memory, ins) -> None:
        x = mem.tensor(ins.args[0]).numpy()
        out = ins.args[-2]
        if x.dtype != np.float32 or mem.program.tensor(out).dtype != "float32" or x.ndim == 0:
            execute_portable(mem, ins)
            return
        dim = int(_scalar(mem, ins.args[1])) % x.ndim
        xm = np.moveaxis(x, dim, -1)
        y = np.empty_like(xm)
        acc = np.full(xm.shape[:-1], first, np.float32)
        with np.errstate(all="ignore"):
            for i in range(xm.shape[-1]):
                acc = step(acc, xm[..., i]).astype(np.float32)
                y[..., i] = acc
        mem.write(out, torch.from_numpy(np.asarray(np.moveaxis(y, -1, dim), order="C")))
    return emulated


def _log_add_exp(acc, x):
    """op_logcumsumexp.cpp's log_add_exp (ATen's _log_add_exp_helper) with the C library's expf and log1pf."""
    lib = libm()
    out = np.empty_like(acc)
    for k, (a, v) in enumerate(zip(acc.reshape(-1), x.reshape(-1))):
        lo = a if a != a else (a if a < v else v)
        hi = a if a != a else (a if v < a else v)
        if lo != hi or np.isfinite(lo):
            out.reshape(-1)[k] = hi + np.float32(lib.log1pf(lib.expf(lo - hi)))
        else:
            out.reshape(-1)[k] = v
    return out


def _emulated_embedding_bag(mem: Memory, ins) -> None:
    """embedding_bag_common.h's out0: per bag, the rows' sequential float32 sum (times per_sample_weights), divided
    by the bag's size for the mean; the other outputs (and the max mode, exact) as PyTorch computes them."""
    execute_portable(mem, ins)
    mode, weighted = int(_scalar(mem, ins.args[4])), not isinstance(mem.program.values[ins.args[6]], ScalarValue)
    if mode == 2:
        return
    weight = mem.tensor(ins.args[0]).numpy().astype(np.float32)
    idx, offsets = mem.tensor(ins.args[1]).numpy(), mem.tensor(ins.args[2]).numpy()
    psw = mem.tensor(ins.args[6]).numpy().astype(np.float32) if weighted else None
    padding = int(_scalar(mem, ins.args[8]))
    bags = len(offsets) - 1 if _scalar(mem, ins.args[7]) else len(offsets)
    out = np.zeros((bags, weight.shape[1]), np.float32)
    for b in range(bags):
        end = offsets[b + 1] if b + 1 < bags else len(idx)  # the last bag: every index from its offset on
        count = 0
        for i in range(int(offsets[b]), int(end)):
            if padding >= 0 and idx[i] == padding:
                continue
            out[b] = out[b] + (psw[i] * weight[idx[i]] if weighted else weight[idx[i]])
            count += 1
        if mode == 1 and count:
            out[b] = out[b] / np.float32(count)
    mem.write(ins.args[9], torch.from_numpy(out))


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
    lib = libm()
    y = np.array([lib.logf(float(v)) for v in q.reshape(-1)], np.float32).reshape(x.shape)
    mem.write(ins.args[2], torch.from_numpy(np.asarray(y, order="C")))


def _emulated_libm_unary(mem: Memory, ins) -> None:
    x = mem.tensor(ins.args[0]).numpy()
    if x.dtype != np.float32 or mem.program.tensor(ins.args[1]).dtype != "float32":
        execute_portable(mem, ins)
        return
    fn = getattr(libm(), LIBM_UNARY[ins.op])
    y = np.array([fn(float(v)) for v in x.reshape(-1)], np.float32).reshape(x.shape)
    mem.write(ins.args[1], torch.from_numpy(np.asarray(y, order="C")))


def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


def _split(ar, ai, cr, ci, wr, wi):
    """op_mcu_rfft.cpp split(): X[k] from Z[k] (a) and Z[m - k] (c), in its operation order."""
    half = np.float32(0.5)
    er, ei = half * (ar + cr), half * (ai - ci)
    orr, oi = half * (ai + ci), np.float32(-0.5) * (ar - cr)
    wr_, wi_ = _cmul(wr, wi, orr, oi)
    return er + wr_, ei + wi_


def rfft_f32(x: np.ndarray, tw: np.ndarray, n_out: int, scale: float) -> np.ndarray:
    """op_mcu_rfft.cpp in float32, operation for operation (the kernel is compiled without fp-contract):
    the N/2-point radix-2 FFT of the pairs and the split for N a power of two, else the direct sum."""
    n = x.shape[-1]
    rows = np.ascontiguousarray(x, np.float32).reshape(-1, n)
    twr, twi = tw[:, 0].astype(np.float32), tw[:, 1].astype(np.float32)
    if n >= 2 and n & (n - 1) == 0:
        m = n // 2
        rev = np.zeros(m, np.int64)
        for i in range(m):
            rev[i] = int(format(i, f"0{max(m.bit_length() - 1, 1)}b")[::-1], 2) if m > 1 else 0
        zr, zi = rows[:, 0::2][:, rev], rows[:, 1::2][:, rev]
        length = 2
        while length <= m:
            half, step = length // 2, n // length
            wr, wi = twr[np.arange(half) * step], twi[np.arange(half) * step]
            zr, zi = zr.reshape(len(rows), -1, length), zi.reshape(len(rows), -1, length)
            vr, vi = _cmul(zr[..., half:], zi[..., half:], wr, wi)
            ur, ui = zr[..., :half], zi[..., :half]
            zr = np.concatenate([ur + vr, ur - vr], axis=-1).reshape(len(rows), m)
            zi = np.concatenate([ui + vi, ui - vi], axis=-1).reshape(len(rows), m)
            length *= 2
        yr, yi = np.zeros((len(rows), n_out), np.float32), np.zeros((len(rows), n_out), np.float32)
        ks = np.arange(1, m // 2 + 1)
        ar, ai, cr, ci = zr[:, ks], zi[:, ks], zr[:, m - ks], zi[:, m - ks]
        yr[:, ks], yi[:, ks] = _split(ar, ai, cr, ci, twr[ks], twi[ks])
        other = ks[2 * ks != m]
        yr[:, m - other], yi[:, m - other] = _split(cr[:, :len(other)], ci[:, :len(other)], ar[:, :len(other)],
                                                    ai[:, :len(other)], twr[m - other], twi[m - other])
        yr[:, 0], yr[:, m] = zr[:, 0] + zi[:, 0], zr[:, 0] - zi[:, 0]
        yi[:, 0], yi[:, m] = 0.0, 0.0
        for k in range(m + 1, n_out):  # two-sided: the conjugate mirror
            yr[:, k], yi[:, k] = yr[:, n - k], -yi[:, n - k]
    else:
        yr, yi = np.zeros((len(rows), n_out), np.float32), np.zeros((len(rows), n_out), np.float32)
        ks = np.arange(n_out)
        for i in range(n):
            idx = (ks * i) % n
            yr = yr + rows[:, i:i + 1] * twr[idx]
            yi = yi + rows[:, i:i + 1] * twi[idx]
    s = np.float32(scale)
    if s != np.float32(1.0):
        yr, yi = yr * s, yi * s
    return np.stack([yr, yi], axis=-1).reshape(x.shape[:-1] + (n_out, 2))


def _emulated_rfft(mem: Memory, ins) -> None:
    x, tw = mem.tensor(ins.args[0]).numpy(), mem.tensor(ins.args[1]).numpy()
    n_out, scale = int(_scalar(mem, ins.args[2])), float(_scalar(mem, ins.args[3]))
    with np.errstate(all="ignore"):
        y = rfft_f32(x, tw, n_out, scale)
    mem.write(ins.args[4], torch.from_numpy(np.ascontiguousarray(y, np.float32)))


# The fp32 operators whose device kernels call the C library's expf/logf/tanhf/powf/... (kernels_portable: every
# kernel file that calls one): the host computes them with its own libm (glibc; the device's is newlib) or with
# PyTorch, which agree on nearly every input, not on all (1 ulp apart: device/compare.libm_island_outputs).
LIBM_OPS = frozenset(LIBM_UNARY) | {"aten::_log_softmax.out", "aten::_softmax.out", "aten::linalg_vector_norm.out",
                                     "mcu::gru.out", "mcu::lstm.out", "aten::sigmoid.out", "aten::tanh.out",
                                     "aten::elu.out", "aten::gelu.out", "aten::glu.out", "aten::logit.out",
                                     "aten::atan2.out", "aten::pow.Scalar_out", "aten::pow.Tensor_Scalar_out",
                                     "aten::pow.Tensor_Tensor_out", "aten::logcumsumexp.out", "aten::hypot.out",
                                     "aten::erfinv.out", "aten::i0.out"}

EMULATED = {**{op: _emulated_libm_unary for op in LIBM_UNARY},
            "aten::var.correction_out": _emulated_var, "aten::var_mean.correction_out": _emulated_var,
            "aten::linalg_vector_norm.out": _emulated_vector_norm, "aten::cumsum.out": _running(np.add, 0.0),
            "aten::cumprod.out": _running(np.multiply, 1.0), "aten::logcumsumexp.out": _running(_log_add_exp, -np.inf),
            "aten::sum.IntList_out": _emulated_sum, "aten::addmm.out": _emulated_addmm,
            "aten::mean.out": _emulated_mean, "aten::mean.dtype_out": _emulated_mean_all,
            "aten::prod.out": _emulated_prod, "aten::prod.int_out": _emulated_prod,
            "aten::mm.out": _emulated_matmul, "aten::bmm.out": _emulated_matmul,
            "aten::native_group_norm.out": _emulated_group_norm,
            "aten::logit.out": _emulated_logit, "mcu::rfft.out": _emulated_rfft,
            "aten::native_layer_norm.out": _emulated_layer_norm,
            "aten::_log_softmax.out": _emulated_softmax(log_softmax_f32),
            "aten::_softmax.out": _emulated_softmax(softmax_f32),
            "aten::_embedding_bag.out": _emulated_embedding_bag,
            "aten::_embedding_bag_forward_only.out": _emulated_embedding_bag,
            "mcu::gru.out": recurrent_f32.emulated("gru"), "mcu::lstm.out": recurrent_f32.emulated("lstm")}
