"""The conv_cols GEMM's assembly (dsp_conv_cols.gemm_cols_asm_body) in tests/test_gemm_asm_emulated.py's Thumb-2
interpreter: a chunk of output pixels of one output row whose input columns are widened as conv_cols
(kernels_generated/dsp_cols.h) widens them (written again here in Python, padding columns and rows the zero
point), against gemm_stream_c's arithmetic on the windows gathered from the input in int8. Reads outside the
columns, stream and frame and writes outside the outputs and the frame fail. QEMU runs the C++ side:
tests/test_generated_firmware.py::test_conv_cols_on_the_m33."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from mcu_gen.backends.generated.dsp_conv_cols import gemm_cols_asm_body
from mcu_gen.backends.generated.dsp_work import COLS_MAX_BYTES

sys.path.insert(0, os.path.dirname(__file__))
from test_gemm_asm_emulated import (D0, M32, SP_TOP, STREAM0, X0, Y0, Machine, expected,  # noqa: E402
                                    random_stream, run, sxtb16)


def widened(img: np.ndarray, oy: int, ox: int, q: int, chunk: int, kh: int, kw: int, s: int, p: tuple,
            zp: int) -> bytes:
    """conv_cols' buffer for pixels ox..ox+q-1 of output row oy (kh window rows of a full chunk's columns)."""
    h, w, cin = img.shape
    ncols_full = (chunk - 1) * s + kw
    out = np.zeros((kh, ncols_full, cin // 4, 2), np.uint32)
    pad = sxtb16((zp & 0xFF) * 0x01010101, 0)
    for ky in range(kh):
        iy = oy * s - p[0] + ky
        for c in range((q - 1) * s + kw):
            ix = ox * s - p[1] + c
            for g in range(cin // 4):
                if 0 <= iy < h and 0 <= ix < w:
                    v = int.from_bytes(img[iy, ix, 4 * g:4 * g + 4].astype(np.int8).tobytes(), "little")
                    out[ky, c, g] = (sxtb16(v, 0), sxtb16(v, 8))
                else:
                    out[ky, c, g] = (pad, pad)
    return out.astype("<u4").tobytes()


def windows(img, oy, ox, q, kh, kw, s, p, zp) -> np.ndarray:
    h, w, cin = img.shape
    x = np.full((q, kh, kw, cin), zp, np.int64)
    for j in range(q):
        for ky in range(kh):
            for kx in range(kw):
                iy, ix = oy * s - p[0] + ky, (ox + j) * s - p[1] + kx
                if 0 <= iy < h and 0 <= ix < w:
                    x[j, ky, kx] = img[iy, ix]
    return x.reshape(q, -1)


CASES = [  # (h, w, cin, n, kh, kw, stride, pad, chunk, oy, ox, q, act_min, act_max)
    (6, 20, 16, 16, 3, 3, 1, (1, 1), 6, 0, 0, 6, -128, 127),     # ResNet-8's K 144, N 16: the top row, left edge
    (6, 20, 16, 16, 3, 3, 1, (1, 1), 6, 2, 18, 2, -128, 127),    # the last, short chunk at the right edge
    (9, 12, 16, 20, 3, 3, 2, (1, 1), 4, 4, 4, 2, 0, 127),        # stride 2, a last block of 4, the bottom row
    (5, 10, 32, 32, 3, 3, 1, (1, 1), 6, 2, 2, 6, -128, 127),     # K 288 (looped sub-blocks), inside
    (4, 8, 64, 8, 3, 3, 1, (1, 1), 4, 1, 4, 4, -20, 90),         # K 576
    (3, 10, 20, 12, 3, 3, 1, (0, 0), 6, 0, 6, 2, -128, 127),     # Cin 20: an odd count of words per column
    (3, 8, 12, 8, 5, 5, 1, (2, 2), 8, 1, 0, 8, -128, 127),       # 5x5, K 300
]


RUNS = [(c, True) for c in CASES] + [(c, False) for c in CASES[:3]]


@pytest.mark.parametrize("case,sign", RUNS, ids=[f"{i}-{'sign' if g else 'relu'}" for i, (_, g) in enumerate(RUNS)])
def test_gemm_cols_asm_equals_gemm_stream_c(case, sign):
    """``sign`` False: under a fused ReLU (act_min 20, above random_stream's output offsets) without the sign term."""
    h, w, cin, n, kh, kw, s, p, chunk, oy, ox, q, act_min, act_max = case
    act_min = act_min if sign else 20
    k = kh * kw * cin
    rng = np.random.default_rng(len(str(case)) + k)
    img = rng.integers(-128, 128, (h, w, cin)).astype(np.int8)
    zp = int(rng.integers(-128, 128))
    words, end8 = random_stream(rng, k, n)
    row_bytes = ((chunk - 1) * s + kw) * cin * 2
    assert kh * row_bytes <= COLS_MAX_BYTES
    cols = widened(img, oy, ox, q, chunk, kh, kw, s, p, zp)
    body = gemm_cols_asm_body("f", k, n, n % 8 == 4, act_min, act_max, cin, kw, s, row_bytes, sign)
    assert any("asr #31" in l for l in body) == sign
    mem = bytearray(Y0 + q * n + 64)
    mem[X0:X0 + len(cols)] = cols
    for i, wd in enumerate(words):
        mem[STREAM0 + 4 * i:STREAM0 + 4 * i + 4] = (wd & M32).to_bytes(4, "little")
    mem[D0:D0 + 4] = STREAM0.to_bytes(4, "little")
    mem[D0 + 4:D0 + 8] = (STREAM0 + 4 * end8).to_bytes(4, "little")
    m = Machine(mem, readable=[(X0, X0 + len(cols)), (D0, D0 + 8), (STREAM0, STREAM0 + 4 * len(words))],
                writable=[(SP_TOP - 8192, SP_TOP), (Y0, Y0 + q * n)])
    run(body, m, (X0, D0, Y0, q))
    assert m.reg("sp") == SP_TOP
    y = np.frombuffer(bytes(mem[Y0:Y0 + q * n]), np.int8).astype(np.int64).reshape(q, n)
    want = expected(windows(img, oy, ox, q, kh, kw, s, p, zp), words, end8, k, n, n % 8 == 4, act_min, act_max)
    assert np.array_equal(y, want), (y, want)
    assert len(np.unique(y)) > 4  # not all saturated
    if q * n * k >= 2 * 144 * 16:  # about one estimated M33 cycle per MAC, the requantization on top
        assert m.cycles / (q * n * k) < 1.12, m.cycles / (q * n * k)
