"""The register-blocked fp32 convolution (kernels_portable/f32_conv_fast.h, issue 27).

Host (run_on_host: runtime + kernels under ASan/UBSan): many shapes — strides, padding, dilation,
groups (depthwise, grouped, depth multiplier), odd channel counts (block tails), narrow and wide rows
(padded-row buffer, overlapping last block, per-pixel border path), 1-D convolutions, batches and fused
clamps — compared with PyTorch within a tolerance AND bit for bit with a numpy model of the documented
summation order (acc = bias; for ic, kh, kw ascending: acc = acc + (w * x), each operation rounded to
float32, taps in the padding contributing nothing). QEMU: a small TCN-style 1-D network and a
depthwise-separable 2-D one verified against PyTorch on the Cortex-M33, and the devices' outputs (M33, M55) equal to the host's bit
for bit.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mcu_gen.firmware.host import run_on_host
from test_kernels_conv import Batch, rand, t

INF = math.inf


def reference_order(x, w, bias, stride, padding, dilation, groups, lo=-INF, hi=INF):
    """The kernel's summation order in float32, vectorized over output pixels."""
    one_d = x.ndim == 3
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, padding, dilation = (1, stride[0]), (0, padding[0]), (1, dilation[0])
    n, cin, ih, iw = x.shape
    cout, cin_g, kh_n, kw_n = w.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    oh = (ih + 2 * ph - dh * (kh_n - 1) - 1) // sh + 1
    ow = (iw + 2 * pw - dw * (kw_n - 1) - 1) // sw + 1
    xp = np.zeros((n, cin, ih + 2 * ph, iw + 2 * pw), np.float32)
    xp[:, :, ph:ph + ih, pw:pw + iw] = x
    inside = np.zeros((ih + 2 * ph, iw + 2 * pw), bool)
    inside[ph:ph + ih, pw:pw + iw] = True
    cout_g = cout // groups
    out = np.zeros((n, cout, oh, ow), np.float32)
    for oc in range(cout):
        acc = np.full((n, oh, ow), bias[oc] if bias is not None else 0.0, np.float32)
        first = (oc // cout_g) * cin_g
        for icg in range(cin_g):
            for kh in range(kh_n):
                for kw in range(kw_n):
                    rows = slice(kh * dh, kh * dh + sh * (oh - 1) + 1, sh)
                    cols = slice(kw * dw, kw * dw + sw * (ow - 1) + 1, sw)
                    xs = xp[:, first + icg, rows, cols]
                    prod = (np.float32(w[oc, icg, kh, kw]) * xs).astype(np.float32)
                    acc = np.where(inside[rows, cols], (acc + prod).astype(np.float32), acc)
        out[:, oc] = acc
    if not (lo == -INF and hi == INF):
        out = np.where(out < lo, np.float32(lo), np.where(out > hi, np.float32(hi), out))
    return out[:, :, 0, :] if one_d else out


# (x shape, w shape, stride, padding, dilation, groups, bias, clamp)
CASES = [
    ((1, 64, 25, 5), (64, 64, 1, 1), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # KWS pointwise
    ((1, 64, 25, 5), (64, 1, 3, 3), (1, 1), (1, 1), (1, 1), 64, True, (0.0, INF)),  # KWS depthwise
    ((1, 1, 49, 10), (64, 1, 10, 4), (2, 2), (5, 1), (1, 1), 1, True, (0.0, INF)),  # KWS stem
    ((1, 1, 28, 28), (8, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # MNIST conv1
    ((1, 8, 13, 13), (16, 8, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # MNIST conv2: tail of 3
    ((1, 3, 17, 17), (8, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1, False, (0.0, 6.0)),  # stem, stride 2
    ((1, 24, 9, 9), (24, 1, 5, 5), (2, 2), (2, 2), (1, 1), 24, True, None),  # 5x5 depthwise s2
    ((1, 12, 11, 13), (12, 1, 5, 5), (1, 1), (2, 2), (1, 1), 12, False, (0.0, INF)),  # 5x5 depthwise s1
    ((1, 6, 2, 2), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 6, True, None),  # all border (2x2)
    ((1, 7, 4, 4), (9, 7, 1, 1), (1, 1), (0, 0), (1, 1), 1, True, None),  # odd channels: 4 + 4 + 1
    ((2, 5, 6, 7), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1, True, (-0.5, 0.25)),  # batch, tails
    ((1, 4, 40, 37), (6, 2, 3, 3), (1, 1), (1, 1), (1, 1), 2, True, None),  # groups 2, wide (no buffer)
    ((1, 4, 9, 9), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), 4, True, None),  # depth multiplier 2
    ((1, 3, 12, 19), (5, 3, 3, 3), (1, 2), (2, 3), (2, 2), 1, True, None),  # dilation 2
    ((1, 2, 9, 23), (4, 2, 2, 7), (3, 1), (1, 3), (1, 1), 1, False, None),  # kernel 2x7
    ((1, 3, 5, 5), (4, 3, 1, 1), (2, 2), (1, 1), (1, 1), 1, True, None),  # strided padded 1x1
    ((1, 1, 3, 3), (5, 1, 5, 5), (1, 1), (2, 2), (1, 1), 1, True, None),  # kernel wider than input
    ((1, 33, 1, 1), (17, 33, 1, 1), (1, 1), (0, 0), (1, 1), 1, True, None),  # one pixel
    ((1, 8, 6, 50), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1, True, None),  # padded rows too big: border path
    # 1-D (TCN-style: dilations 1, 2, 4, causal left padding as symmetric padding, odd lengths)
    ((1, 6, 31), (8, 6, 3), (1,), (2,), (2,), 1, True, None),
    ((2, 5, 17), (5, 5, 3), (1,), (4,), (4,), 1, True, (0.0, INF)),
    ((1, 16, 50), (16, 1, 5), (1,), (2,), (1,), 16, True, None),  # depthwise 1-D
    ((1, 4, 30), (4, 2, 5), (2,), (4,), (2,), 2, False, None),
    ((1, 3, 101), (7, 3, 9), (3,), (0,), (1,), 1, True, None),
    ((1, 10, 7), (3, 10, 1), (1,), (0,), (1,), 1, True, None),
]


def _add_case(b: Batch, rng, case):
    xs, ws, stride, padding, dilation, groups, bias, clamp = case
    x, w = rand(rng, *xs), rand(rng, *ws)
    bv = rand(rng, ws[0]) if bias else None
    fn = F.conv1d if len(xs) == 3 else F.conv2d
    y = fn(t(x), t(w), None if bv is None else t(bv), stride=stride, padding=padding, dilation=dilation,
           groups=groups)
    lo, hi = clamp if clamp else (-INF, INF)
    torch_out = torch.clamp(y, lo, hi).numpy()
    exact = reference_order(x, w, bv, stride, padding, dilation, groups, lo, hi)
    label = f"x={xs} w={ws} s={stride} p={padding} d={dilation} g={groups} clamp={clamp}"
    if clamp is not None and len(xs) == 3:  # mcu::conv2d is 2-D only: a 1-D case runs as height 1
        x, w = x[:, :, None, :], w[:, :, None, :]
        torch_out, exact = torch_out[:, :, None, :], exact[:, :, None, :]
        stride, padding, dilation = (1, stride[0]), (0, padding[0]), (1, dilation[0])
    xi, wi = b.input(x), b.const(w)
    bi = b.const(bv) if bias else b.none()
    o = b.output(torch_out, label)
    if clamp is None:
        b.op("aten::convolution.out", [xi, wi, bi, b.ints(stride), b.ints(padding), b.ints(dilation), b.bool(False),
                                       b.ints([0] * len(stride)), b.int(groups), o, o])
    else:
        b.op("mcu::conv2d.out", [xi, wi, bi, b.ints(stride), b.ints(padding), b.ints(dilation), b.int(groups),
                                 b.float(lo), b.float(hi), o, o])
    return exact, label


def linear_order(x, w, bias, lo=-INF, hi=INF):
    """f32_matrix.h's linear order in float32: per output four partial sums s_j over the inputs i = j mod 4
    below the last multiple of 4, the rest into s_0, then (s_0 + s_1) + (s_2 + s_3), + bias, clamp."""
    x2 = x.reshape(-1, x.shape[-1]).astype(np.float32)
    n = x2.shape[1]
    n4 = n // 4
    s = np.zeros((x2.shape[0], w.shape[0], 4), np.float32)
    for i in range(n4):
        for j in range(4):
            s[:, :, j] = s[:, :, j] + (x2[:, None, 4 * i + j] * w[None, :, 4 * i + j]).astype(np.float32)
    for i in range(4 * n4, n):
        s[:, :, 0] = s[:, :, 0] + (x2[:, None, i] * w[None, :, i]).astype(np.float32)
    v = (s[:, :, 0] + s[:, :, 1]) + (s[:, :, 2] + s[:, :, 3])
    if bias is not None:
        v = v + bias.astype(np.float32)
    v = np.where(v < lo, np.float32(lo), np.where(v > hi, np.float32(hi), v)).astype(np.float32)
    return v.reshape(*x.shape[:-1], w.shape[0])


# (input shape, out features, bias, clamp): blocks of 4 outputs, the rest one at a time; inputs with and
# without a tail beyond a multiple of 4 (and fewer than 4)
LINEAR_CASES = [((1, 400), 10, True, (0.0, INF)), ((1, 400), 10, True, None), ((3, 33), 17, False, None),
                ((2, 7), 8, True, (-0.5, 0.25)), ((1, 3), 5, True, None), ((2, 64), 4, False, (0.0, INF))]


def _add_linear(b: Batch, rng, case):
    in_shape, out_f, bias, clamp = case
    x, w = rand(rng, *in_shape), rand(rng, out_f, in_shape[-1])
    bv = rand(rng, out_f) if bias else None
    lo, hi = clamp if clamp else (-INF, INF)
    want = torch.clamp(F.linear(t(x), t(w), None if bv is None else t(bv)), lo, hi).numpy()
    label = f"linear {in_shape} -> {out_f} bias={bias} clamp={clamp}"
    o = b.output(want, label)
    bi = b.const(bv) if bias else b.none()
    if clamp is None:
        b.op("aten::linear.out", [b.input(x), b.const(w), bi, o, o])
    else:
        b.op("mcu::linear.out", [b.input(x), b.const(w), bi, b.float(lo), b.float(hi), o, o])
    return linear_order(x, w, bv, lo, hi), label


def test_linear_matches_torch_and_the_documented_order():
    rng = np.random.default_rng(28)
    b = Batch()
    exacts = [_add_linear(b, rng, c) for c in LINEAR_CASES]
    outs = run_on_host(b.p, b.inputs)
    for got, (_, want, label), (exact, _) in zip(outs, b.expected, exacts):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=label)
        np.testing.assert_array_equal(got, exact, err_msg=f"summation order: {label}")


def test_blocked_conv_matches_torch_and_the_documented_order():
    rng = np.random.default_rng(27)
    b = Batch()
    exacts = [_add_case(b, rng, c) for c in CASES]
    outs = run_on_host(b.p, b.inputs)
    assert len(outs) == len(CASES)
    for got, (_, want, label), (exact, _) in zip(outs, b.expected, exacts):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=label)
        np.testing.assert_array_equal(got, exact, err_msg=f"summation order: {label}")


def test_blocked_conv_random_shapes():
    """120 random shapes (seeded), both checks."""
    rng = np.random.default_rng(2027)
    cases = []
    while len(cases) < 120:
        one_d = rng.random() < 0.3
        k = int(rng.integers(1, 8))
        s = int(rng.integers(1, 4))
        d = int(rng.integers(1, 4)) if rng.random() < 0.3 else 1
        p = int(rng.integers(0, k))
        kind = rng.choice(["dense", "depthwise", "grouped"])
        g = 1
        cin = int(rng.integers(1, 12))
        cout = int(rng.integers(1, 12))
        if kind == "depthwise":
            g = cin
            cout = cin * int(rng.integers(1, 3))
        elif kind == "grouped":
            g = int(rng.integers(1, 4))
            cin, cout = cin * g, cout * g
        w_in = int(rng.integers(1, 40))
        h_in = 1 if one_d else int(rng.integers(1, 12))
        kh = 1 if one_d else int(rng.integers(1, 6))
        if w_in + 2 * p < d * (k - 1) + 1 or h_in + 2 * (0 if one_d else p // 2) < d * (kh - 1) + 1:
            continue
        clamp = (0.0, INF) if rng.random() < 0.3 else None
        if one_d:
            cases.append(((1, cin, w_in), (cout, cin // g, k), (s,), (p,), (d,), g, bool(rng.random() < 0.7), clamp))
        else:
            cases.append(((int(rng.integers(1, 3)), cin, h_in, w_in), (cout, cin // g, kh, k), (s, int(rng.integers(1, 3))),
                          (p // 2, p), (d, d), g, bool(rng.random() < 0.7), clamp))
    b = Batch()
    exacts = [_add_case(b, rng, c) for c in cases]
    outs = run_on_host(b.p, b.inputs)
    for got, (_, want, label), (exact, _) in zip(outs, b.expected, exacts):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=label)
        np.testing.assert_array_equal(got, exact, err_msg=f"summation order: {label}")


TCN = '''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(8, 16, 3, padding=2, dilation=1)
        self.c2 = nn.Conv1d(16, 16, 3, padding=4, dilation=2)
        self.c3 = nn.Conv1d(16, 16, 3, padding=8, dilation=4, groups=16)
        self.c4 = nn.Conv1d(16, 12, 1)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        y = torch.relu(self.c1(x))[..., :-2]
        y = torch.relu(self.c2(y))[..., :-4]
        y = torch.relu(self.c3(y))[..., :-8]
        y = self.c4(y)
        return self.fc(y.mean(-1))

def model():
    torch.manual_seed(0)
    return Net().eval()

def example_inputs():
    return (torch.randn(1, 8, 49, generator=torch.Generator().manual_seed(1)),)

def test_inputs():
    g = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 8, 49, generator=g),) for _ in range(2)]
'''


@pytest.mark.qemu
def test_tcn_conv1d_on_the_m33(qemu_tools, tmp_path):
    """A TCN-style Conv1d network (dilations 1, 2, 4, depthwise, pointwise) end to end on QEMU mps2-an505."""
    import mcu_gen

    model = tmp_path / "tcn.py"
    model.write_text(TCN)
    r = mcu_gen.run(str(model), board="mps2-an505", out=tmp_path / "out", n_random=1)
    assert r.verified, r
    assert r.max_abs_error < 1e-4


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547", "mps2-an386"])
def test_device_matches_host_bit_for_bit(qemu_tools, tmp_path, board):
    """The Cortex-M33 and Cortex-M4 builds (assembly 1x1, 3x3 (4-, 3- and 2-pixel blocks; the M4's clamp
    with IT instead of VSEL), linear and 2x2 max pool paths, VFP code from GCC) and the Cortex-M55 build
    (MVE-F 1x1, 3x3 and linear paths) give the host runner's outputs bit for bit: the summation orders
    hold on the devices too. Cases: 1x1 with even and odd channel counts (the assembly runs pairs of
    input channels, a C tail the odd one), KWS's and MNIST's layers, 3x3 rows with tails of 1-3 pixels,
    both clamps, a 5x5 depthwise, 1-D, linear layers (blocks of 4 outputs and the rest), 2x2 max pools
    with NaN / +-0 / +-inf windows."""
    from mcu_gen.device.runner import run
    from mcu_gen.program import pte

    rng = np.random.default_rng(33)
    b = Batch()
    for case in [CASES[0], CASES[1], CASES[2], CASES[3], CASES[4], CASES[6], CASES[9], CASES[10], CASES[17],
                 CASES[19],
                 ((1, 8, 13, 13), (16, 8, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # MNIST conv2 + relu
                 ((1, 3, 9, 14), (8, 3, 3, 3), (1, 1), (0, 1), (1, 1), 1, False, (-0.25, 0.5)),  # 3x3, both clamps
                 ((1, 2, 7, 11), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # rows of 9: tail of 1
                 ((1, 3, 6, 12), (8, 3, 3, 3), (2, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # stride-2 rows, tail 2
                 ((1, 5, 3, 7), (8, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),
                 ((1, 2, 4, 4), (4, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1, False, None)]:
        _add_case(b, rng, case)
    for case in LINEAR_CASES:  # the blocked linear (assembly on the M33, MVE on the M55)
        _add_linear(b, rng, case)
    # mcu::max_pool2d's 2x2 path (assembly on both): non-negative windows, and NaN / +-0 / +-inf / negative
    # ones that leave it for window_max's rule
    pool_values = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5, 0.5], np.float32)
    for x in [rand(rng, 1, 8, 26, 26) + np.float32(0.5),
              rng.choice(pool_values, size=(2, 3, 11, 13)).astype(np.float32)]:
        o = b.output(F.max_pool2d(t(x), 2).numpy(), f"mcu::max_pool2d 2x2 {x.shape}")
        b.op("mcu::max_pool2d.out", [b.input(x), b.ints([2, 2]), b.ints([2, 2]), b.ints([0, 0]), b.ints([1, 1]),
                                     b.bool(False), o, o])
    host = run_on_host(b.p, b.inputs)
    path = tmp_path / "cases.pte"
    path.write_bytes(pte.write(b.p))
    r = run(pte_path=path, board=board, out=tmp_path / board, inputs=[b.inputs], cycles=False)
    assert r.verified, r
    dev = r.outputs[0]
    assert len(dev) == len(host)
    for got, want, (_, _, label) in zip(dev, host, b.expected):  # bit patterns: signs of zero, NaN payloads
        np.testing.assert_array_equal(np.asarray(got, np.float32).view(np.uint32),
                                      np.asarray(want, np.float32).view(np.uint32), err_msg=label)
