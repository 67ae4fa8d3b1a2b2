"""mcu::conv2d_max_pool2d (kernels_portable/op_mcu_conv2d_max_pool2d.cpp, f32_conv_pool.h): a convolution,
its clamp and a 2x2 / stride 2 max pool in one kernel, chosen by mcu_gen/capture/passes.py's
fuse_conv_max_pool for 3x3 stride-1 unpadded convolutions with blocks of 4 output channels.

Host (run_on_host, ASan/UBSan): MNIST's layers, odd heights and widths (the pool's floor drops the last
row / column; odd pooled widths take the 2-column block), channel tails and other shapes (the per-window
path), groups, batches, both clamps, rows wider than the host's stack band (16 columns): compared with PyTorch
(tolerance), bit for bit with a numpy model of the documented order (the blocked convolution's sums, then
max_keep_nan over (v00, v01), (v10, v11), then the clamp), and as values with mcu::conv2d + mcu::max_pool2d.
Bad arguments fail cleanly. QEMU: the M33 (assembly), M4 (assembly, IT instead of VSEL) and M55 (MVE assembly)
builds give the host's bits, NaN / inf windows included; MNIST's graph is fused.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mcu_gen.firmware.host import HostRunError, run_on_host
from test_fp32_fast import reference_order
from test_kernels_conv import Batch, rand, t

INF = math.inf


def pool_order(conv: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """f32_conv_pool.h's order on the (unclamped) convolution's output."""
    ph, pw = conv.shape[2] // 2, conv.shape[3] // 2
    v = [conv[:, :, i:2 * ph:2, j:2 * pw:2] for i in (0, 1) for j in (0, 1)]

    def keep_nan(best, x):
        return np.where((x > best) | np.isnan(x), x, best)

    m = keep_nan(keep_nan(v[0], v[1]), keep_nan(v[2], v[3]))
    return np.where(m < lo, np.float32(lo), np.where(m > hi, np.float32(hi), m)).astype(np.float32)


# (x shape, w shape, stride, padding, dilation, groups, bias, clamp)
CASES = [
    ((1, 1, 28, 28), (8, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # MNIST conv1
    ((1, 8, 13, 13), (16, 8, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # MNIST conv2: 11 -> 5
    ((1, 3, 9, 14), (8, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1, False, (-0.25, 0.5)),  # both clamps, 12 -> 6
    ((2, 2, 8, 8), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # batch, no clamp, 6 -> 3 (2-col block)
    ((1, 5, 7, 9), (9, 5, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # 9 channels: 4 + 4 + 1 tail
    ((1, 4, 10, 11), (8, 2, 3, 3), (1, 1), (0, 0), (1, 1), 2, True, (0.0, 6.0)),  # groups 2
    ((1, 2, 5, 72), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),  # 70 columns: bands 16 x 4, 6
    ((1, 2, 4, 68), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # 66 columns: bands 16 x 3, 14, 4
    ((1, 3, 4, 7), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # 5 columns: one 4-column block
    ((1, 2, 4, 5), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None),  # 3 columns: per window
    ((1, 3, 11, 12), (5, 3, 3, 3), (2, 1), (1, 1), (1, 1), 1, True, (0.0, INF)),  # stride, padding: per window
    ((1, 4, 9, 9), (4, 1, 5, 5), (1, 1), (2, 2), (1, 1), 4, False, None),  # depthwise 5x5: per window
    ((1, 2, 12, 10), (4, 2, 3, 3), (1, 1), (0, 1), (2, 1), 1, True, None),  # dilation: per window
]


def _add_case(b: Batch, rng, case, x=None, w=None):
    xs, ws, stride, padding, dilation, groups, bias, clamp = case
    x = rand(rng, *xs) if x is None else x
    w = rand(rng, *ws) if w is None else w
    bv = rand(rng, ws[0]) if bias else None
    lo, hi = clamp if clamp else (-INF, INF)
    y = F.conv2d(t(x), t(w), None if bv is None else t(bv), stride=stride, padding=padding, dilation=dilation,
                 groups=groups)
    want = F.max_pool2d(torch.clamp(y, lo, hi), 2).numpy()
    exact = pool_order(reference_order(x, w, bv, stride, padding, dilation, groups), lo, hi)
    label = f"x={xs} w={ws} s={stride} p={padding} d={dilation} g={groups} clamp={clamp}"
    xi, wi = b.input(x), b.const(w)
    bi = b.const(bv) if bias else b.none()
    args = [xi, wi, bi, b.ints(stride), b.ints(padding), b.ints(dilation), b.int(groups), b.float(lo), b.float(hi)]
    o = b.output(want, label)
    b.op("mcu::conv2d_max_pool2d.out", args + [o, o])
    # the unfused pair, for comparison
    conv = b.p.add_tensor(y.shape, "float32")
    b.op("mcu::conv2d.out", args + [conv, conv])
    o2 = b.output(want, "unfused " + label)
    b.op("mcu::max_pool2d.out", [conv, b.ints([2, 2]), b.ints([2, 2]), b.ints([0, 0]), b.ints([1, 1]), b.bool(False),
                                 o2, o2])
    return exact, label


def test_conv_pool_matches_torch_the_documented_order_and_the_unfused_ops():
    rng = np.random.default_rng(29)
    b = Batch()
    exacts = [_add_case(b, rng, c) for c in CASES]
    outs = run_on_host(b.p, b.inputs)
    assert len(outs) == 2 * len(CASES)
    for k, (exact, label) in enumerate(exacts):
        fused, unfused = outs[2 * k], outs[2 * k + 1]
        want = b.expected[2 * k][1]
        assert fused.shape == want.shape, label
        np.testing.assert_allclose(fused, want, rtol=1e-4, atol=1e-5, err_msg=label)
        np.testing.assert_array_equal(fused.view(np.uint32), exact.view(np.uint32), err_msg=f"order: {label}")
        np.testing.assert_array_equal(fused, unfused, err_msg=f"unfused: {label}")


def test_conv_pool_random_shapes():
    """60 seeded random shapes (most on the blocked path: 3x3 stride 1 unpadded, 4k channels per group;
    the rest per window), the same three checks."""
    rng = np.random.default_rng(2029)
    cases = []
    while len(cases) < 60:
        g = int(rng.integers(1, 3))
        cin = g * int(rng.integers(1, 6))
        blocked = rng.random() < 0.7
        cout = g * (4 * int(rng.integers(1, 3)) if blocked else int(rng.integers(1, 7)))
        k = 3 if blocked else int(rng.integers(1, 5))
        s = 1 if blocked else int(rng.integers(1, 3))
        p = 0 if blocked else int(rng.integers(0, k))
        h, w = int(rng.integers(k + 1, 14)), int(rng.integers(k + 1, 40))
        if (h + 2 * p - k) // s + 1 < 2 or (w + 2 * p - k) // s + 1 < 2:
            continue
        clamp = [None, (0.0, INF), (-0.5, 0.75)][int(rng.integers(0, 3))]
        cases.append(((int(rng.integers(1, 3)), cin, h, w), (cout, cin // g, k, k), (s, s), (p, p), (1, 1), g,
                      bool(rng.random() < 0.8), clamp))
    b = Batch()
    exacts = [_add_case(b, rng, c) for c in cases]
    outs = run_on_host(b.p, b.inputs)
    for k, (exact, label) in enumerate(exacts):
        fused, unfused = outs[2 * k], outs[2 * k + 1]
        np.testing.assert_allclose(fused, b.expected[2 * k][1], rtol=1e-4, atol=1e-5, err_msg=label)
        np.testing.assert_array_equal(fused.view(np.uint32), exact.view(np.uint32), err_msg=f"order: {label}")
        np.testing.assert_array_equal(fused, unfused, err_msg=f"unfused: {label}")


def _special_cases(b: Batch, rng):
    """NaN / inf / +-0 in the inputs (windows with NaN, inf, equal values), MNIST conv2's shape."""
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], np.float32)
    out = []
    for case in [((1, 8, 13, 13), (16, 8, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, (0.0, INF)),
                 ((1, 2, 8, 10), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, True, None)]:
        x = rand(rng, *case[0])
        mask = rng.random(x.shape) < 0.02
        x[mask] = rng.choice(values, size=int(mask.sum()))
        out.append(_add_case(b, rng, case, x=x))
    # all-zero weights: windows of equal values (signs of zero)
    case = ((1, 2, 6, 10), (4, 2, 3, 3), (1, 1), (0, 0), (1, 1), 1, False, (0.0, INF))
    out.append(_add_case(b, rng, case, w=np.zeros((4, 2, 3, 3), np.float32)))
    return out


def test_conv_pool_nan_and_inf_windows_on_the_host():
    rng = np.random.default_rng(30)
    b = Batch()
    exacts = _special_cases(b, rng)
    outs = run_on_host(b.p, b.inputs)
    for k, (exact, label) in enumerate(exacts):
        fused = outs[2 * k]
        np.testing.assert_array_equal(np.isnan(fused), np.isnan(exact), err_msg=label)
        ok = ~np.isnan(exact)
        np.testing.assert_array_equal(fused[ok].view(np.uint32), exact[ok].view(np.uint32), err_msg=label)
        np.testing.assert_array_equal(fused, outs[2 * k + 1], err_msg=f"unfused: {label}")


def _one(x_shape, w_shape, out_shape, stride=(1, 1), padding=(0, 0), lo=0.0, hi=INF, bias=4):
    b = Batch()
    rng = np.random.default_rng(0)
    xi = b.input(rand(rng, *x_shape))
    bi = b.const(rand(rng, bias)) if bias else b.none()
    o = b.output(np.zeros(out_shape, np.float32))
    b.op("mcu::conv2d_max_pool2d.out", [xi, b.const(rand(rng, *w_shape)), bi, b.ints(stride), b.ints(padding),
                                        b.ints([1, 1]), b.int(1), b.float(lo), b.float(hi), o, o])
    return b


@pytest.mark.parametrize("what,args", [
    ("out not pooled", ((1, 2, 8, 8), (4, 2, 3, 3), (1, 4, 6, 6))),
    ("out one row short", ((1, 2, 8, 8), (4, 2, 3, 3), (1, 4, 2, 3))),
    ("out channels", ((1, 2, 8, 8), (4, 2, 3, 3), (1, 3, 3, 3))),
    ("lo > hi", ((1, 2, 8, 8), (4, 2, 3, 3), (1, 4, 3, 3)), ),
    ("bias length", ((1, 2, 8, 8), (4, 2, 3, 3), (1, 4, 3, 3))),
    ("conv output of 1 row", ((1, 2, 3, 8), (4, 2, 3, 3), (1, 4, 0, 3))),
    ("weight channels", ((1, 3, 8, 8), (4, 2, 3, 3), (1, 4, 3, 3))),
    ("kernel larger than input", ((1, 2, 2, 8), (4, 2, 3, 3), (1, 4, 1, 3))),
])
def test_conv_pool_rejects_bad_arguments(what, args):
    kw = {"lo": 1.0, "hi": 0.0} if what == "lo > hi" else {}
    if what == "bias length":
        kw["bias"] = 3
    b = _one(*args, **kw)
    with pytest.raises(HostRunError, match="KernelFailed"):
        run_on_host(b.p, b.inputs)


def test_mnist_graph_is_fused_and_other_shapes_are_not():
    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.paths import EXAMPLES

    program = export_model(load_model_file(EXAMPLES / "mnist" / "model.py"))
    assert program.operators == ["mcu::conv2d_max_pool2d.out", "mcu::linear.out"]

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Conv2d(3, 8, 3, padding=1)  # padded: not fused
            self.b = torch.nn.Conv2d(8, 6, 3)  # 6 channels: not fused
            self.c = torch.nn.Conv2d(6, 8, 3)

        def forward(self, x):
            y = F.max_pool2d(torch.relu(self.a(x)), 2)
            y = F.max_pool2d(torch.relu(self.b(y)), 2)
            z = self.c(y)  # used by two pools (one 3x3)
            return F.max_pool2d(z, 3), F.max_pool2d(z, 2)

    from mcu_gen.capture.model_file import ModelSpec

    spec = ModelSpec(Net().eval(), (torch.randn(1, 3, 32, 32),), name="net")
    program = export_model(spec)
    assert "mcu::conv2d_max_pool2d.out" not in program.operators, program.operators


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547", "mps2-an386"])
def test_conv_pool_device_matches_host_bit_for_bit(qemu_tools, tmp_path, board):
    """The M33 (assembly), M4 (assembly with IT/VMOV) and M55 (MVE assembly) builds give the host's outputs bit
    for bit (signs of zero included), for the blocked and per-window shapes and NaN / inf / +-0 windows
    (NaN: the same positions). The unfused pair beside each case runs mcu::conv2d's MVE 3x3 clamp on NaN
    inputs too (it turned NaN into the lower bound before VCMP LT became GT)."""
    from mcu_gen.device.runner import run
    from mcu_gen.program import pte

    rng = np.random.default_rng(31)
    b = Batch()
    for case in CASES:
        _add_case(b, rng, case)
    _special_cases(b, rng)
    host = run_on_host(b.p, b.inputs)
    path = tmp_path / "cases.pte"
    path.write_bytes(pte.write(b.p))
    r = run(pte_path=path, board=board, out=tmp_path / board, inputs=[b.inputs], cycles=False)
    dev = r.outputs[0]
    assert len(dev) == len(host)
    for got, want, (_, _, label) in zip(dev, host, b.expected):
        got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
        # A NaN the convolution makes (inf - inf, 0 * inf) is the FPU's default NaN: positive on Arm,
        # negative on x86 (the host); NaN positions must agree, every other value bit for bit.
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=label)
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32), err_msg=label)
