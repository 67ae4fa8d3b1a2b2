"""CMSIS-NN backend: backend choice, scratch sizes, and the adapters bit-exact with the
portable int8 kernels on QEMU (Cortex-M33 DSP, Cortex-M55 MVE, Cortex-M4 DSP).

The adapter tests need CMSIS-NN sources: set MCU_GEN_CMSIS_NN to a checkout (Include/,
Source/). Without it they skip with the reason printed; the rest runs anywhere.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from mcu_gen.firmware import builder
from mcu_gen.backends import cmsis_nn
from mcu_gen.boards import get_board
from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction, Program

CL = (0, 2, 3, 1)
CMSIS = os.environ.get(cmsis_nn.ENV_VAR)
needs_cmsis = pytest.mark.skipif(
    not CMSIS, reason=f"{cmsis_nn.ENV_VAR} is not set: no CMSIS-NN sources to build the adapters with")
needs_qemu = pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")


# -- backend choice (no CMSIS-NN needed) -------------------------------------------------------

def test_choose_backend_without_cmsis_nn():
    board = get_board("mps2-an505")
    auto = cmsis_nn.choose_backend("auto", board, None, "not given")
    assert auto.backend == "portable"
    assert "--cmsis-nn PATH" in auto.warning and cmsis_nn.ENV_VAR in auto.warning
    # no speed claim: the default build's generated kernels are not "the portable kernels" CMSIS-NN once beat
    assert "faster" not in auto.warning and "docs/cycles.md" in auto.warning
    with pytest.raises(cmsis_nn.CmsisNnError, match="--backend cmsis-nn: CMSIS-NN not found"):
        cmsis_nn.choose_backend("cmsis-nn", board, None, "not given")
    assert cmsis_nn.choose_backend("portable", board, Path("/x"), "").backend == "portable"
    assert cmsis_nn.choose_backend("cmsis-nn", board, Path("/x"), "").backend == "cmsis-nn"


def test_board_variants():
    assert cmsis_nn.board_variant(get_board("mps2-an505")) == "dsp"
    assert cmsis_nn.board_variant(get_board("mps3-an547")) == "mve"
    assert cmsis_nn.board_variant(get_board("mps2-an386")) == "dsp"
    assert cmsis_nn.board_variant(get_board("host")) is None


def test_bad_path_is_an_error(tmp_path):
    with pytest.raises(cmsis_nn.CmsisNnError, match="no CMSIS-NN there"):
        cmsis_nn.locate(tmp_path)


def test_adapters_mirror_portable_signatures():
    """Same op names and signature strings as the portable kernels: a program runs on either."""
    from mcu_gen.backends import kernels

    portable = kernels.find_kernels()
    adapters = cmsis_nn.find_kernels()
    assert len(adapters) >= 11
    for op, k in adapters.items():
        assert k.backend == "cmsis-nn"
        assert op in portable, op
        assert k.signature == portable[op].signature, op


def _int8_program():
    """A one-op int8 program (max pool) as a .pte, for the build-level checks."""
    p = Program()
    x = p.add_tensor((1, 4, 6, 6), "int8", dim_order=CL)
    p.inputs.append(x)
    out = p.add_tensor((1, 4, 3, 3), "int8", dim_order=CL)
    p.outputs.append(out)
    il = lambda v: p.add_scalar("int_list", v)  # noqa: E731
    i = lambda v: p.add_scalar("int", v)  # noqa: E731
    scratch = p.add_tensor((0,), "uint8")
    p.instructions.append(Instruction("cortex_m::quantized_avg_pool2d.out",
                                      [x, il([2, 2]), il([2, 2]), il([0, 0]), p.add_scalar("bool", False), i(0),
                                       i(1 << 30), i(-5), scratch, out, out]))
    return p


def test_auto_without_cmsis_nn_warns_and_reports(tmp_path, monkeypatch):
    from mcu_gen.plan import inplace_pass
    from mcu_gen.program import pte

    monkeypatch.delenv(cmsis_nn.ENV_VAR, raising=False)
    monkeypatch.setattr(cmsis_nn, "from_pack_manager", lambda: (None, "cmsis-pack-manager is not installed"))
    p = _int8_program()
    inplace_pass.plan_memory(p)
    (tmp_path / "m.pte").write_bytes(pte.write(p))
    with pytest.warns(cmsis_nn.CmsisNnWarning, match="--cmsis-nn PATH"):
        r = builder.build(pte_path=tmp_path / "m.pte", out=tmp_path / "o", compile=False)
    assert r.report["backend"]["chosen"] == "portable"
    assert "cmsis-pack-manager is not installed" in r.report["backend"]["warning"]
    assert len(r.report["backend"]["warning"]) < 300  # one line on every int8 build, not a paragraph
    assert [row["backend"] for row in r.report["operators"]] == ["portable"]
    with pytest.raises(builder.BuildError, match="--backend cmsis-nn: CMSIS-NN not found"):
        builder.build(pte_path=tmp_path / "m.pte", out=tmp_path / "o2", compile=False, backend="cmsis-nn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = builder.build(pte_path=tmp_path / "m.pte", out=tmp_path / "o3", compile=False, backend="portable")
    assert r.report["backend"]["chosen"] == "portable"


@needs_cmsis
def test_cmsis_nn_build_copies_only_needed_sources(tmp_path):
    from mcu_gen.plan import inplace_pass
    from mcu_gen.program import pte

    p = _int8_program()
    inplace_pass.plan_memory(p)
    (tmp_path / "m.pte").write_bytes(pte.write(p))
    r = builder.build(pte_path=tmp_path / "m.pte", out=tmp_path / "o", compile=False, backend="cmsis-nn")
    assert r.report["backend"]["chosen"] == "cmsis-nn"
    assert [row["backend"] for row in r.report["operators"]] == ["cmsis-nn"]
    copied = sorted(f.name for f in (tmp_path / "o" / "firmware" / "cmsis_nn" / "Source").rglob("*.c"))
    assert "arm_avgpool_s8.c" in copied and "arm_convolve_s8.c" not in copied
    assert (tmp_path / "o" / "firmware" / "kernels" / "op_cortex_m_quantized_avg_pool2d.cpp").is_file()  # fallback
    assert r.report["backend"]["cmsis_nn_scratch_bytes"] == 4 * 4  # DSP: int32 per channel


# -- scratch sizes: the Python mirror against CMSIS-NN's own functions -------------------------

CONV_CASES = [  # (n, h, w, c), kh, kw, cout, stride, padding, dilation
    ((1, 28, 28, 1), 5, 5, 8, (1, 1), (2, 2), (1, 1)),
    ((1, 14, 14, 8), 5, 5, 16, (1, 1), (2, 2), (1, 1)),
    ((1, 49, 10, 1), 10, 4, 64, (2, 2), (5, 1), (1, 1)),
    ((1, 25, 5, 64), 1, 1, 64, (1, 1), (0, 0), (1, 1)),
    ((1, 32, 32, 16), 3, 3, 16, (1, 1), (1, 1), (1, 1)),
    ((1, 1, 40, 8), 1, 3, 4, (1, 1), (0, 1), (1, 1)),
    ((1, 1, 40, 8), 1, 5, 4, (2, 2), (0, 2), (1, 1)),
    ((1, 1, 17, 3), 1, 3, 4, (1, 1), (0, 0), (1, 1)),
    ((1, 8, 8, 3), 3, 3, 4, (2, 2), (1, 1), (2, 2)),
    ((1, 96, 96, 3), 3, 3, 8, (2, 2), (1, 1), (1, 1)),
    ((1, 12, 12, 32), 1, 1, 64, (2, 2), (0, 0), (1, 1)),
]
DW_CASES = [
    ((1, 25, 5, 64), 3, 3, 64, (1, 1), (1, 1), (1, 1)),
    ((1, 48, 48, 8), 3, 3, 8, (2, 2), (1, 1), (1, 1)),
    ((1, 9, 9, 40), 5, 5, 40, (1, 1), (2, 2), (1, 1)),
    ((1, 10, 10, 1), 5, 5, 3, (1, 1), (2, 2), (1, 1)),
    ((1, 28, 28, 1), 5, 5, 8, (1, 1), (2, 2), (1, 1)),
    ((2, 7, 6, 3), 2, 4, 3, (1, 1), (1, 2), (2, 1)),
    ((1, 9, 9, 4), 3, 3, 8, (2, 2), (1, 1), (1, 1)),
]


def _out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


@pytest.fixture(scope="module")
def buffer_size_lib(tmp_path_factory):
    if not CMSIS:
        pytest.skip(f"{cmsis_nn.ENV_VAR} is not set: cannot compile CMSIS-NN's get_buffer_size functions")
    root = Path(CMSIS)
    src = root / "Source"
    files = [src / "ConvolutionFunctions" / "arm_convolve_get_buffer_sizes_s8.c",
             src / "ConvolutionFunctions" / "arm_depthwise_conv_get_buffer_sizes_s8.c",
             src / "PoolingFunctions" / "arm_avgpool_get_buffer_sizes_s8.c",
             src / "FullyConnectedFunctions" / "arm_fully_connected_get_buffer_sizes_s8.c"]
    lib = tmp_path_factory.mktemp("cmsis") / "libsizes.so"
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-I", str(root / "Include"), *map(str, files), "-o", str(lib)],
                   check=True)
    return ctypes.CDLL(str(lib))


class Dims(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int32), ("h", ctypes.c_int32), ("w", ctypes.c_int32), ("c", ctypes.c_int32)]


class Tile(ctypes.Structure):
    _fields_ = [("w", ctypes.c_int32), ("h", ctypes.c_int32)]


class Act(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("max", ctypes.c_int32)]


class ConvParams(ctypes.Structure):
    _fields_ = [("input_offset", ctypes.c_int32), ("output_offset", ctypes.c_int32), ("stride", Tile),
                ("padding", Tile), ("dilation", Tile), ("activation", Act)]


class DwParams(ctypes.Structure):
    _fields_ = [("input_offset", ctypes.c_int32), ("output_offset", ctypes.c_int32), ("ch_mult", ctypes.c_int32),
                ("stride", Tile), ("padding", Tile), ("dilation", Tile), ("activation", Act)]


@pytest.mark.parametrize("variant", ["dsp", "mve"])
def test_conv_scratch_matches_cmsis_nn(buffer_size_lib, variant):
    fn = getattr(buffer_size_lib, f"arm_convolve_wrapper_s8_get_buffer_size_{variant}")
    for shape, kh, kw, cout, s, p, d in CONV_CASES:
        n, h, w, c = shape
        oh, ow = _out(h, kh, s[0], p[0], d[0]), _out(w, kw, s[1], p[1], d[1])
        params = ConvParams(0, 0, Tile(s[1], s[0]), Tile(p[1], p[0]), Tile(d[1], d[0]), Act(-128, 127))
        want = fn(ctypes.byref(params), ctypes.byref(Dims(n, h, w, c)), ctypes.byref(Dims(cout, kh, kw, c)),
                  ctypes.byref(Dims(n, oh, ow, cout)))
        got = cmsis_nn.conv_buffer_bytes(variant, shape, kh, kw, c, s, p, d, ow)
        assert got == want, (variant, shape, kh, kw, s, p, d)


@pytest.mark.parametrize("variant", ["dsp", "mve"])
def test_depthwise_scratch_matches_cmsis_nn(buffer_size_lib, variant):
    # The generic *_get_buffer_size() is what the adapter asks on the device; the _dsp/_mve
    # entry points differ from it only for one input channel on MVE (documented as compiler
    # dependent), so compare with the generic function's logic: MVE takes the larger.
    fn = getattr(buffer_size_lib, f"arm_depthwise_conv_wrapper_s8_get_buffer_size_{variant}")
    for shape, kh, kw, cout, s, p, d in DW_CASES:
        n, h, w, c = shape
        oh, ow = _out(h, kh, s[0], p[0], d[0]), _out(w, kw, s[1], p[1], d[1])
        params = DwParams(0, 0, cout // c, Tile(s[1], s[0]), Tile(p[1], p[0]), Tile(d[1], d[0]), Act(-128, 127))
        want = fn(ctypes.byref(params), ctypes.byref(Dims(n, h, w, c)), ctypes.byref(Dims(1, kh, kw, cout)),
                  ctypes.byref(Dims(n, oh, ow, cout)))
        got = cmsis_nn.depthwise_buffer_bytes(variant, shape, kh, kw, cout, s, p, d, ow)
        assert got >= want, (variant, shape, kh, kw)
        if not (variant == "mve" and c == 1):
            assert got == want, (variant, shape, kh, kw)


@pytest.mark.parametrize("variant", ["dsp", "mve"])
def test_avgpool_scratch_matches_cmsis_nn(buffer_size_lib, variant):
    fn = getattr(buffer_size_lib, f"arm_avgpool_s8_get_buffer_size_{variant}")
    for ow, c in ((1, 64), (14, 8), (3, 3)):
        assert cmsis_nn.avgpool_buffer_bytes(variant, c) == fn(ow, c)


@pytest.mark.parametrize("variant", ["dsp", "mve"])
def test_batch_matmul_scratch_matches_cmsis_nn(buffer_size_lib, variant):
    # arm_batch_matmul_s8's buffer: arm_fully_connected_s8_get_buffer_size(output dims), as CMSIS-NN's
    # tests and the adapter ask it.
    fn = getattr(buffer_size_lib, f"arm_fully_connected_s8_get_buffer_size_{variant}")
    for b, m, n in ((1, 1, 1), (2, 5, 19), (3, 4, 64)):
        assert cmsis_nn.batch_matmul_buffer_bytes(variant, n) == fn(ctypes.byref(Dims(1, b, m, n)))


def test_size_scratch_sizes_batch_matmul():
    b = Batch()
    add_bmm(b, np.random.default_rng(0), 2, 5, 37, 19, (5, -3, -4))
    ins = b.p.instructions[0]
    assert cmsis_nn.size_scratch(b.p, "mve") == 19 * 4
    assert b.p.tensor(ins.args[7]).shape == (19 * 4,)
    assert cmsis_nn.size_scratch(b.p, "dsp") == 0


# -- adapters bit-exact with the portable kernels, on QEMU ---------------------------------------

class Batch:
    """Independent one-instruction cases with constant inputs, run as one program."""

    def __init__(self):
        self.p = Program()
        # Per instruction: the path its adapter must take ("cmsis-nn": its output comes from a
        # CMSIS-NN call; "portable": from the portable kernel it falls back to), or None.
        self.paths = []

    def const(self, arr, dim_order=None) -> int:
        arr = np.asarray(arr)
        stored = arr if dim_order is None else np.ascontiguousarray(arr.transpose(dim_order))
        return self.p.add_tensor(arr.shape, str(arr.dtype), dim_order=dim_order, data=np.ascontiguousarray(stored))

    def out(self, shape, dim_order=None) -> int:
        i = self.p.add_tensor(shape, "int8", dim_order=dim_order)
        self.p.outputs.append(i)
        return i

    def scratch(self) -> int:
        return self.p.add_tensor((0,), "uint8")

    def ints(self, v) -> int:
        return self.p.add_scalar("int_list", [int(x) for x in v])

    def int(self, v) -> int:
        return self.p.add_scalar("int", int(v))

    def none(self) -> int:
        return self.p.add_scalar("none")

    def op(self, name, args, out, path=None) -> None:
        self.p.instructions.append(Instruction(name, [*args, out, out]))
        self.paths.append(path)


def i8(rng, *shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(np.int8)


def requant(rng, n, acc_scale):
    """Per-channel Q31 multipliers/shifts of realistic scales, plus exact-tie cases."""
    ms, ss = [], []
    for _ in range(n):
        m, e = np.frexp(acc_scale * rng.uniform(0.3, 3.0))
        ms.append(min(int(round(m * 2**31)), 2**31 - 1))
        ss.append(int(e))
    if n >= 2:
        ms[0], ss[0] = 1 << 30, -3  # multiplier 0.5, shift -3: ties at odd multiples of 8
        ms[1], ss[1] = 2**31 - 1, -12
    return np.array(ms, np.int32), np.array(ss, np.int32)


def add_conv(b, rng, x_shape, w_ohwi, stride=(1, 1), padding=(0, 0), dilation=(1, 1), bias=True, nhwc=False):
    n, c, h, w = x_shape
    x = i8(rng, *x_shape)
    wt = i8(rng, *w_ohwi, lo=-127)
    cout, kh, kw, _ = w_ohwi
    m, s = requant(rng, cout, 1.0 / (kh * kw * w_ohwi[3] * 300))
    oh, ow = _out(h, kh, stride[0], padding[0], dilation[0]), _out(w, kw, stride[1], padding[1], dilation[1])
    bv = b.const(rng.integers(-5000, 5000, size=cout).astype(np.int32)) if bias else b.none()
    if nhwc:
        xi, o, name = b.const(x.transpose(0, 2, 3, 1)), b.out((n, oh, ow, cout)), "cortex_m::quantized_conv2d_nhwc.out"
    else:
        xi, o, name = b.const(x, CL), b.out((n, cout, oh, ow), CL), "cortex_m::quantized_conv2d.out"
    b.op(name, [xi, b.const(wt), bv, b.ints(stride), b.ints(padding), b.ints(dilation), b.int(int(rng.integers(-127, 129))),
                b.int(int(rng.integers(-128, 128))), b.const(m), b.const(s), b.int(-128), b.int(127), b.scratch()], o)


def add_dw(b, rng, x_shape, k, dm=1, stride=(1, 1), padding=(0, 0), dilation=(1, 1), act=(-128, 127)):
    n, c, h, w = x_shape
    cout = c * dm
    x, wt = i8(rng, *x_shape), i8(rng, 1, k[0], k[1], cout, lo=-127)
    m, s = requant(rng, cout, 1.0 / (k[0] * k[1] * 300))
    oh, ow = _out(h, k[0], stride[0], padding[0], dilation[0]), _out(w, k[1], stride[1], padding[1], dilation[1])
    o = b.out((n, cout, oh, ow), CL)
    b.op("cortex_m::quantized_depthwise_conv2d.out",
         [b.const(x, CL), b.const(wt), b.const(rng.integers(-3000, 3000, size=cout).astype(np.int32)), b.ints(stride),
          b.ints(padding), b.ints(dilation), b.int(dm), b.int(int(rng.integers(-127, 129))),
          b.int(int(rng.integers(-128, 128))), b.const(m), b.const(s), b.int(act[0]), b.int(act[1]), b.scratch()], o)


def add_linear(b, rng, rows, k, n, kernel_sum=False, filter_offset=0, bias=True):
    x, wt = i8(rng, rows, k), i8(rng, n, k, lo=-127)
    in_off = int(rng.integers(-127, 129))
    bv = rng.integers(-5000, 5000, size=n).astype(np.int32)
    m, s = requant(rng, 1, 1.0 / (k * 300))
    ks = b.none()
    if kernel_sum:  # as ExecuTorch: bias + input_offset * sum(w + filter_offset)
        ks = b.const((bv + in_off * (wt.astype(np.int32).sum(axis=1) + k * filter_offset)).astype(np.int32))
    o = b.out((rows, n))
    b.op("cortex_m::quantized_linear.out",
         [b.const(x), b.const(wt), b.const(bv) if bias else b.none(), ks, b.int(in_off), b.int(filter_offset),
          b.int(int(rng.integers(-128, 128))), b.ints([m[0]]), b.ints([s[0]]), b.int(127), b.int(-128)], o)


NHWC_POS = (0, 3, 1, 2)  # logical NCHW dim -> position in (N, H, W, C)


def add_pad(b, rng, shape, pre, post, value, order=None, out_order=None, path=None):
    """cortex_m::pad.out; pads read as the kernel reads them (right-aligned, NHWC when channels-last)."""
    nd = len(shape)
    cl = nd == 4 and (shape[1] == 1 or (shape[2] == 1 and shape[3] == 1) or (order is not None and order[:2] == (0, 2)))
    pos = [NHWC_POS[d] if cl else 4 - nd + d for d in range(nd)]
    out_shape = tuple(s + pre[q] + post[q] for s, q in zip(shape, pos))
    o = b.out(out_shape, out_order if out_order is not None else order)
    b.op("cortex_m::pad.out", [b.const(i8(rng, *shape), order), b.ints(pre), b.ints(post), b.int(value)], o, path)


def add_transpose(b, rng, shape, perm, order=None, out_order=None, path=None):
    o = b.out(tuple(shape[p % len(shape)] for p in perm), out_order)
    b.op("cortex_m::transpose.out", [b.const(i8(rng, *shape), order), b.ints(perm)], o, path)


def add_minmax(b, rng, op, a_shape, b_shape, a_order=None, b_order=None, out_order=None, path=None):
    o = b.out(np.broadcast_shapes(a_shape, b_shape), out_order)
    b.op(f"cortex_m::{op}.out", [b.const(i8(rng, *a_shape), a_order), b.const(i8(rng, *b_shape), b_order)], o, path)


def add_bmm(b, rng, batch, m, k, n, zps, acc_scale=None, requant_ms=None, path=None):
    """cortex_m::quantized_batch_matmul.out: lhs [B, M, K], rhs transposed [B, N, K]; zps are
    (lhs, rhs, output): the first two are offsets added to the values."""
    if requant_ms is None:
        ms, ss = requant(rng, 1, acc_scale or 1.0 / (110 * k**0.5))
        requant_ms = (int(ms[0]), int(ss[0]))
    mult, shift = requant_ms
    o = b.out((batch, m, n))
    b.op("cortex_m::quantized_batch_matmul.out",
         [b.const(i8(rng, batch, m, k)), b.int(zps[0]), b.const(i8(rng, batch, n, k)), b.int(zps[1]), b.int(zps[2]),
          b.int(mult), b.int(shift), b.scratch()], o, path)


def random_broadcast_pair(rng):
    """Two shapes that broadcast (numpy rules), up to 5-D, sizes 1..17."""
    nd = int(rng.integers(1, 6))
    full = [int(rng.choice([1, 2, 3, 5, 17])) for _ in range(nd)]
    shapes = []
    for _ in range(2):
        s = [d if rng.random() < 0.5 else 1 for d in full]
        shapes.append(tuple(s[int(rng.integers(0, nd)):] if rng.random() < 0.3 else s))
    return shapes


def layout_cases(b, rng) -> None:
    """pad, transpose, minimum, maximum and batch matmul: each adapter's CMSIS-NN path (shapes
    that reach the vectorized loops and their tails) and its portable fallbacks."""
    C, P = "cmsis-nn", "portable"
    # pad: arm_pad_s8 on the output's memory dims
    add_pad(b, rng, (1, 5, 7, 9), [0, 1, 2, 3], [0, 2, 1, 1], -7, order=CL, path=C)  # NHWC pads, per-pixel copies
    add_pad(b, rng, (3, 17, 33), [0, 1, 0, 2], [0, 1, 2, 13], 100, path=C)  # 3-D: pads right-aligned
    add_pad(b, rng, (5, 40), [0, 0, 2, 0], [0, 0, 3, 0], -128, path=C)  # rows only: whole-row copies
    add_pad(b, rng, (2, 3, 1, 1), [1, 0, 0, 0], [0, 0, 0, 2], 5, path=C)  # H = W = 1 counts as NHWC
    add_pad(b, rng, (19,), [0, 0, 0, 21], [0, 0, 0, 0], 1, path=C)
    add_pad(b, rng, (1, 4, 5, 6), [0, 1, 1, 0], [0, 0, 1, 2], 3, order=CL, out_order=(0, 1, 2, 3), path=P)  # 2 layouts
    # transpose: reduced to a copy, a 2-D transpose or a 3-/4-D permutation of memory
    add_transpose(b, rng, (1, 8, 5, 7), [0, 2, 3, 1], path=C)  # NCHW -> NHWC: 2-D [8, 35]
    add_transpose(b, rng, (1, 6, 9, 3), [0, 3, 1, 2], path=C)  # NHWC -> NCHW: 2-D [54, 3]
    add_transpose(b, rng, (2, 3, 4, 5), [3, 1, 0, 2], path=C)  # 4-D
    add_transpose(b, rng, (6, 17, 3), [1, 0, 2], path=C)  # 3-D
    add_transpose(b, rng, (4, 6, 5), [0, 1, 2], out_order=(0, 2, 1), path=C)  # identity perm, new dim order
    add_transpose(b, rng, (3, 1, 1, 4), [0, 2, 3, 1], order=CL, out_order=CL, path=C)  # same memory: a copy
    add_transpose(b, rng, (13, 11), [-1, 0], path=C)
    add_transpose(b, rng, (2, 9400), [1, 0], path=C)  # past arm_transpose_s8's 2-D gather offsets: as 3-D
    add_transpose(b, rng, (2, 3, 2, 3, 2), [4, 2, 0, 3, 1], path=P)  # 5 dims after merging
    # minimum / maximum: canonical shapes of up to 4 dims
    for op in ("minimum", "maximum"):
        add_minmax(b, rng, op, (3, 37), (3, 37), path=C)  # flat (prepared at load)
        add_minmax(b, rng, op, (2, 3, 19), (1,), path=C)  # one-element operand (prepared at load)
        add_minmax(b, rng, op, (1, 8, 5, 5), (1, 8, 1, 1), a_order=CL, out_order=CL, path=C)  # per channel, NHWC
        add_minmax(b, rng, op, (3, 1, 5, 17), (1, 4, 5, 1), path=C)  # 4 canonical dims
        add_minmax(b, rng, op, (4, 6, 33), (33,), path=C)  # lower rank
        add_minmax(b, rng, op, (2, 1, 3, 1, 5), (1, 4, 1, 2, 1), path=P)  # 5 canonical dims
        add_minmax(b, rng, op, (1, 4, 3, 3), (1, 4, 3, 3), a_order=CL, out_order=CL, path=P)  # memory orders differ
    for _ in range(8):  # random broadcasts (numpy rules), bit-exact either way
        a_shape, b_shape = random_broadcast_pair(rng)
        for op in ("minimum", "maximum"):
            add_minmax(b, rng, op, a_shape, b_shape)
    # batch matmul: arm_batch_matmul_s8 (rhs transposed; MVE: kernel sums in the scratch)
    add_bmm(b, rng, 2, 5, 37, 19, (5, -3, -4), path=C)  # rhs offset: DSP 2-row, MVE 4-row blocks + tails
    add_bmm(b, rng, 1, 3, 64, 8, (128, 0, 7), path=C)  # rhs offset 0
    add_bmm(b, rng, 3, 4, 17, 6, (-256, 256, 100), acc_scale=1 / 30000, path=C)  # offsets at the limits
    add_bmm(b, rng, 1, 2, 8, 5, (0, 0, 1), requant_ms=(1 << 20, 2), path=C)  # left shift that cannot overflow
    add_bmm(b, rng, 1, 2, 300, 5, (0, 0, 0), requant_ms=(1 << 11, 9), path=P)  # left shift that could overflow
    add_bmm(b, rng, 1, 2, 16, 3, (1, 2, 3), requant_ms=(1 << 30, -40), path=P)  # shift outside -31..30


def adapter_cases(seed=0, paths=None) -> Program:
    rng = np.random.default_rng(seed)
    b = Batch()
    add_conv(b, rng, (1, 1, 28, 28), (8, 5, 5, 1), padding=(2, 2))  # MNIST conv1 (1 input channel)
    add_conv(b, rng, (1, 8, 14, 14), (16, 5, 5, 8), padding=(2, 2))  # MNIST conv2
    add_conv(b, rng, (1, 1, 49, 10), (16, 10, 4, 1), stride=(2, 2), padding=(5, 1))  # KWS stem
    add_conv(b, rng, (1, 16, 6, 5), (24, 1, 1, 16))  # 1x1 fast
    add_conv(b, rng, (1, 16, 6, 5), (8, 1, 1, 16), stride=(2, 2), bias=False)  # 1x1 strided
    add_conv(b, rng, (1, 8, 1, 20), (4, 1, 3, 8), padding=(0, 1))  # 1xN
    add_conv(b, rng, (2, 3, 9, 7), (4, 3, 3, 3), dilation=(2, 1), padding=(2, 1))  # batch 2, dilation
    add_conv(b, rng, (1, 4, 7, 7), (6, 3, 3, 2), padding=(1, 1))  # groups 2: portable loops
    add_conv(b, rng, (1, 3, 8, 8), (4, 3, 3, 3), padding=(1, 1), nhwc=True)
    # few input channels: stacked rows + arm_nn_mat_mult_nt_t_s8 (cmsis_nn_conv.h stacked_conv2d)
    add_conv(b, rng, (1, 3, 11, 10), (48, 3, 3, 3), stride=(2, 2), padding=(1, 1))  # one weight copy
    add_conv(b, rng, (2, 2, 9, 8), (5, 3, 5, 2), stride=(2, 1), padding=(1, 2), bias=False)  # ring, batch 2
    add_conv(b, rng, (1, 1, 12, 9), (3, 4, 2, 1), stride=(1, 3), padding=(3, 0))  # padded rows only at the ends
    add_dw(b, rng, (1, 64, 25, 5), (3, 3), padding=(1, 1))  # 3x3 path
    add_dw(b, rng, (1, 24, 12, 12), (3, 3), stride=(2, 2), padding=(1, 1), act=(-128, 60))
    add_dw(b, rng, (1, 20, 9, 9), (5, 5), padding=(2, 2))  # opt path with scratch
    add_dw(b, rng, (1, 4, 9, 9), (3, 3), dm=2, stride=(2, 2), padding=(1, 1))  # channel multiplier
    add_dw(b, rng, (1, 1, 10, 10), (5, 5), dm=8, padding=(2, 2))  # one input channel (MVE: as a conv)
    add_dw(b, rng, (2, 3, 7, 6), (2, 4), dilation=(2, 1), padding=(1, 2))
    add_linear(b, rng, 1, 784, 10)
    add_linear(b, rng, 3, 65, 130)  # more channels than one MVE kernel-sum block, 3 rows
    add_linear(b, rng, 1, 640, 128, kernel_sum=True)
    add_linear(b, rng, 2, 33, 7, kernel_sum=True, filter_offset=3)
    add_linear(b, rng, 1, 16, 9, bias=False)
    for shape, order in (((1, 8, 5, 5), CL), ((3, 70), None)):
        x, y = i8(rng, *shape), i8(rng, *shape)
        o = b.out(shape, order)
        b.op("cortex_m::quantized_add.out",
             [b.const(x, order), b.int(-3), b.int(1 << 30), b.int(-1), b.const(y, order), b.int(7), b.int(1518500250),
              b.int(-2), b.int(-5), b.int(1 << 30), b.int(-19), b.int(-100), b.int(127)], o)
        o = b.out(shape, order)
        b.op("cortex_m::quantized_mul.out",
             [b.const(x, order), b.int(4), b.const(y, order), b.int(-9), b.int(2), b.int(1 << 30), b.int(-6)], o)
    xb, yb = i8(rng, 1, 8, 4, 4), i8(rng, 1, 8, 1, 1)  # broadcast: portable path
    o = b.out((1, 8, 4, 4), CL)
    b.op("cortex_m::quantized_add.out",
         [b.const(xb, CL), b.int(0), b.int(1 << 30), b.int(-1), b.const(yb), b.int(0), b.int(1 << 30), b.int(-1),
          b.int(0), b.int(1 << 30), b.int(-19), b.int(-128), b.int(127)], o)
    for x_shape, k, s, p in (((1, 8, 28, 28), (2, 2), (2, 2), (0, 0)), ((1, 64, 25, 5), (25, 5), (25, 5), (0, 0)),
                             ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1)), ((1, 16, 8, 8), (2, 2), (2, 2), (0, 0))):
        n, c, h, w = x_shape
        oh, ow = _out(h, k[0], s[0], p[0], 1), _out(w, k[1], s[1], p[1], 1)
        x = i8(rng, *x_shape)
        if c == 16:
            x = (x // 2) * 2 + 1  # odd values: many exact ties of the 2x2 average
        o = b.out((n, c, oh, ow), CL)
        b.op("cortex_m::quantized_avg_pool2d.out",
             [b.const(x, CL), b.ints(k), b.ints(s), b.ints(p), b.p.add_scalar("bool", False), b.int(3),
              b.int(1 << 30), b.int(-5), b.scratch()], o)
        o = b.out((n, c, oh, ow), CL)
        b.op("cortex_m::quantized_max_pool2d.out",
             [b.const(x, CL), b.ints(k), b.ints(s), b.ints(p), b.ints([1, 1]), b.p.add_scalar("bool", False), b.int(3),
              b.int(3), b.int(-20), b.int(127)], o)
    layout_cases(b, rng)
    if paths is not None:
        paths.extend(b.paths)
    return b.p


def device_outputs(board: str, program: Program, tmp_path: Path, backend: str = "cmsis-nn"):
    from unittest import mock

    from mcu_gen.plan import inplace_pass
    from mcu_gen.firmware import platformio_project
    from mcu_gen.program import pte
    from mcu_gen.device.qemu import QemuSession

    inplace_pass.plan_memory(program)
    (tmp_path / "cases.pte").write_bytes(pte.write(program))
    # No PlatformIO test vectors (as bench_cmsis_nn.py): they come from mcu-gen's int8 reference,
    # which has no minimum/maximum/batch matmul; the outputs are compared with the portable kernels.
    with mock.patch.object(platformio_project, "_render_test", lambda *a, **k: None):
        r = builder.build(pte_path=tmp_path / "cases.pte", board=board, out=tmp_path / f"{board}-{backend}",
                          backend=backend, cmsis_nn_path=CMSIS if backend == "cmsis-nn" else None,
                          kernels="library")  # the adapters themselves (auto would generate the equal-shape adds)
    with QemuSession(r.board, r.elf) as link:
        link.hello()
        status, ticks = link.run()
        assert status == 0
        outs = [link.read_output(i) for i in range(len(r.program.outputs))]
    return outs, r


def stubbed_outputs(r, tmp_path: Path) -> list:
    """The outputs of build r's firmware rebuilt with every CMSIS-NN function its adapters call
    replaced by a stub that returns 0 (success, buffer size 0) and writes nothing (as
    bench/bench_cmsis_nn.py outside_cmsis_nn): an output a CMSIS-NN call should have written stays
    as the arena left it, one the portable kernel writes is unchanged."""
    import re

    from mcu_gen.firmware import toolchain
    from mcu_gen.device.qemu import QemuSession

    proj = tmp_path / (r.out.name + "-stubbed")
    shutil.copytree(r.out / "firmware", proj, ignore=shutil.ignore_patterns("build"))
    called = set()
    for f in list((proj / "kernels").glob("*.cpp")) + list((proj / "kernels").glob("*.h")):
        called |= set(cmsis_nn._CALL.findall(cmsis_nn._strip_comments(f.read_text())))
    stubs = sorted(called & set(cmsis_nn.source_index(proj / "cmsis_nn")))
    (proj / "cmsis_nn_stubs.c").write_text("".join(f"int {name}(void) {{ return 0; }}\n" for name in stubs))
    cm = re.sub(r"^\s*cmsis_nn/Source/\S+\n", "", (proj / "CMakeLists.txt").read_text(), flags=re.M)
    assert "add_executable(firmware.elf\n" in cm, "CMakeLists.txt layout changed"
    (proj / "CMakeLists.txt").write_text(cm.replace("add_executable(firmware.elf\n",
                                                    "add_executable(firmware.elf\n  cmsis_nn_stubs.c\n", 1))
    elf = toolchain.cmake_build(proj, proj / "build")
    with QemuSession(r.board, elf) as link:
        link.hello()
        status, _ = link.run()
        assert status == 0
        return [link.read_output(i) for i in range(len(r.program.outputs))]


@needs_cmsis
@needs_qemu
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547", "mps2-an386"])
def test_adapters_bit_exact_with_portable(board, tmp_path):
    paths = []
    program = adapter_cases(paths=paths)
    want = [np.ascontiguousarray(o).tobytes() for o in run_on_host(program, [])]  # portable, host, ASan
    got, r = device_outputs(board, adapter_cases(), tmp_path)
    assert r.report["backend"]["chosen"] == "cmsis-nn"
    assert r.report["backend"]["cmsis_nn_variant"] == cmsis_nn.board_variant(r.board)
    assert all(row["backend"] == "cmsis-nn" for row in r.report["operators"])
    ops = [ins.op for ins in program.instructions]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"case {i} ({ops[i]}) differs on {board}: {sum(a != b for a, b in zip(g, w))} bytes"
    # Which path each labelled case took: with CMSIS-NN stubbed out, a case that runs on CMSIS-NN
    # loses its output and one that falls back to the portable kernel keeps it.
    stubbed = stubbed_outputs(r, tmp_path)
    labelled = [i for i, p in enumerate(paths) if p is not None]
    assert {paths[i] for i in labelled} == {"cmsis-nn", "portable"}
    for i in labelled:
        if paths[i] == "cmsis-nn":
            assert stubbed[i] != want[i], f"case {i} ({ops[i]}) on {board} does not run on CMSIS-NN"
        else:
            assert stubbed[i] == want[i], f"case {i} ({ops[i]}) on {board} does not run on the portable kernel"

