"""kernels_portable/op_mcu_gru.cpp and op_mcu_lstm.cpp in float32, operation for operation (they are compiled
without fp-contract): an int8 program's GRU / LSTM island computes here what the device computes, so that the
quantize after it sees the same floats (fp32_emulation.EMULATED). Each gate row's sum is f32_matrix.h's linear_f32
(four partial sums, then the bias); sigmoid is 1 / (1 + expf(-x)) and tanh tanhf, from the C library
(c_libm.py: the host's glibc, the device's newlib, which agree on nearly every input)."""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.program.ir import ScalarValue
from mcu_gen.reference.c_libm import libm

F32 = np.float32


def _gemv(w: np.ndarray, bias, x: np.ndarray) -> np.ndarray:
    """f32_matrix.h linear_f32 for one input row: per output four partial sums s_q over the inputs i = q mod 4
    below 4 floor(n / 4), the rest added to s_0, then (s_0 + s_1) + (s_2 + s_3), then the bias."""
    n = w.shape[1]
    s = [np.zeros(w.shape[0], F32) for _ in range(4)]
    for i in range(n - n % 4):
        s[i % 4] = s[i % 4] + w[:, i] * x[i]
    for i in range(n - n % 4, n):
        s[0] = s[0] + w[:, i] * x[i]
    v = (s[0] + s[1]) + (s[2] + s[3])
    return v + bias if bias is not None else v


def _vector(fn, x: np.ndarray) -> np.ndarray:
    return np.array([fn(float(v)) for v in x], F32)


def _sigmoid(lib, x: np.ndarray) -> np.ndarray:
    return F32(1.0) / (F32(1.0) + _vector(lib.expf, -x))


def _gru_step(lib, w, x, h):
    w_ih, w_hh, b_ih, b_hh = w
    n = h.shape[0]
    gi, gh = _gemv(w_ih, b_ih, x), _gemv(w_hh, b_hh, h)
    r = _sigmoid(lib, gi[:n] + gh[:n])
    z = _sigmoid(lib, gi[n:2 * n] + gh[n:2 * n])
    cand = _vector(lib.tanhf, gi[2 * n:] + r * gh[2 * n:])
    return (F32(1.0) - z) * cand + z * h


def _lstm_step(lib, w, x, h, c):
    w_ih, w_hh, b_ih, b_hh = w
    n = h.shape[0]
    gates = _gemv(w_ih, b_ih, x) + _gemv(w_hh, b_hh, h)
    i, f = _sigmoid(lib, gates[:n]), _sigmoid(lib, gates[n:2 * n])
    g, o = _vector(lib.tanhf, gates[2 * n:3 * n]), _sigmoid(lib, gates[3 * n:])
    c = f * c + i * g
    return o * _vector(lib.tanhf, c), c


def recurrent_f32(kind: str, x: np.ndarray, states: list, params: list, has_biases: bool, layers: int,
                  bidirectional: bool, batch_first: bool) -> tuple:
    """(output, final states) of mcu::gru (states [h0]) or mcu::lstm (states [h0, c0]) as the kernels compute
    them."""
    lib = libm()
    seq = np.ascontiguousarray(x, F32)
    if batch_first:
        seq = seq.transpose(1, 0, 2)  # [T, B, F]: the kernels' step order, in either layout
    steps, batch = seq.shape[:2]
    dirs, per = (2 if bidirectional else 1), (4 if has_biases else 2)
    states = [np.array(s, F32, copy=True) for s in states]
    hidden = states[0].shape[-1]
    for layer in range(layers):
        out = np.zeros((steps, batch, dirs * hidden), F32)
        for d in range(dirs):
            k = (layer * dirs + d) * per
            w = [np.asarray(p, F32) for p in params[k:k + 2]]
            w += [np.asarray(p, F32) for p in params[k + 2:k + 4]] if has_biases else [None, None]
            for b in range(batch):
                s = layer * dirs + d
                for t in (range(steps) if d == 0 else reversed(range(steps))):
                    if kind == "gru":
                        states[0][s, b] = _gru_step(lib, w, seq[t, b], states[0][s, b])
                    else:
                        states[0][s, b], states[1][s, b] = _lstm_step(lib, w, seq[t, b], states[0][s, b],
                                                                      states[1][s, b])
                    out[t, b, d * hidden:(d + 1) * hidden] = states[0][s, b]
        seq = out
    return (seq.transpose(1, 0, 2) if batch_first else seq), states


def emulated(kind: str):
    """fp32_emulation.EMULATED's function for mcu::gru.out (kind "gru") or mcu::lstm.out ("lstm")."""
    def run(mem, ins) -> None:
        p = mem.program
        n_states = 1 if kind == "gru" else 2
        a = ins.args
        x = mem.tensor(a[0]).numpy()
        states = [mem.tensor(a[1 + k]).numpy() for k in range(n_states)]
        params = [mem.tensor(i).numpy() for i in p.values[a[1 + n_states]].value]
        flags = [p.values[i].value for i in a[2 + n_states:6 + n_states]]
        assert all(isinstance(p.values[i], ScalarValue) for i in a[2 + n_states:6 + n_states])
        has_biases, layers, bidirectional, batch_first = bool(flags[0]), int(flags[1]), bool(flags[2]), bool(flags[3])
        with np.errstate(all="ignore"):
            y, final = recurrent_f32(kind, x, states, params, has_biases, layers, bidirectional, batch_first)
        outs = a[6 + n_states:]
        mem.write(outs[0], torch.from_numpy(np.ascontiguousarray(y)))
        for index, s in zip(outs[1:1 + n_states], final):
            mem.write(index, torch.from_numpy(np.ascontiguousarray(s)))
        mem.write(outs[1 + n_states], torch.zeros(tuple(p.tensor(outs[1 + n_states]).shape)))  # work: scratch
    return run
