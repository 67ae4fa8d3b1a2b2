"""cortex_m::quantized_linear's paths (kernels_portable/op_cortex_m_quantized_linear.cpp): one pass over x
for 4 output channels and one channel at a time for the last ones; SXTB16 + SMLAD on the DSP extension (with
SADD16 for the offsets, without when both are 0), VMLADAVA.S8 on MVE (offsets through sum x and sum w), plain
C elsewhere; K not a multiple of 4 (nor of 16) leaves a tail. Every case is byte for byte the int8 reference
(mcu_gen.reference.integer.quantized_linear, int64 sums), which test_kernels_int8.py and
test_quantize_reference.py hold to ExecuTorch's, on the host and on QEMU mps2-an505 / mps2-an386 (DSP) and
mps3-an547 (MVE)."""
from __future__ import annotations

import numpy as np
import pytest

from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction, Program, TensorValue
from mcu_gen.quantize.int8_common import quantize_multiplier
from mcu_gen.reference import integer

# (rows, K, N, kernel_sum, bias, input_offset, filter_offset, extremes)
CASES = (
    (1, 400, 10, True, False, 0, 0, False),  # MNIST's classifier (ExecuTorch: kernel_sum, symmetric weights)
    (1, 256, 8, False, True, 128, 0, False),
    (3, 33, 5, False, True, -7, 3, False),  # K tail of 1 (DSP) / 1 of 16 + 1 (MVE), 4 + 1 channels
    (2, 17, 4, True, False, 0, -5, False),  # kernel_sum with a filter offset
    (1, 7, 3, False, False, 100, 0, False),  # K < 4: the tail only; no bias
    (2, 64, 9, False, True, 0, 0, False),
    (1, 1000, 2, False, False, -256, -256, True),  # |x + a| = |w + b| = 384 in every product
    (1, 1000, 6, False, False, 256, 256, True),
)


def linear_program(rng, cases):
    p, wants = Program(), []
    xs = []
    for rows, k, n, use_ks, use_bias, in_off, f_off, extreme in cases:
        if extreme:
            x = np.full((rows, k), -128 if in_off < 0 else 127, np.int8)
            w = np.full((n, k), -128 if f_off < 0 else 127, np.int8)
        else:
            x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
            w = rng.integers(-127, 128, (n, k)).astype(np.int8)
        bias = rng.integers(-20000, 20000, n).astype(np.int32) if use_bias else None
        ks = None
        if use_ks:
            ks = (w.astype(np.int64).sum(axis=1) * 11 + (bias if use_bias else 0)).astype(np.int32)
        bound = float(np.abs((x.astype(np.int64) + in_off) @ (w.astype(np.int64) + f_off).T).max() + 1)
        m, s = quantize_multiplier(200.0 / bound)  # outputs spread over int8
        out_off, act = int(rng.integers(-20, 20)), (-128, 127)
        xi = p.add(TensorValue((rows, k), "int8", scale=0.1, zero_point=-in_off))
        wi = p.add(TensorValue((n, k), "int8", data=w))
        bi = p.add(TensorValue((n,), "int32", data=bias)) if bias is not None and ks is None else p.add_scalar("none")
        ki = p.add(TensorValue((1, n), "int32", data=ks.reshape(1, n))) if ks is not None else p.add_scalar("none")
        out = p.add(TensorValue((rows, n), "int8", scale=0.1, zero_point=out_off))
        p.instructions.append(Instruction("cortex_m::quantized_linear.out", [
            xi, wi, bi, ki, p.add_scalar("int", in_off), p.add_scalar("int", f_off), p.add_scalar("int", out_off),
            p.add_scalar("int_list", [m]), p.add_scalar("int_list", [s]), p.add_scalar("int", act[1]),
            p.add_scalar("int", act[0]), out, out]))
        p.inputs.append(xi)
        p.outputs.append(out)
        xs.append(x)
        wants.append(integer.quantized_linear(x, w, bias if ks is None else None, None if ks is None else ks.reshape(1, n),
                                              in_off, f_off, out_off, [m], [s], act[1], act[0]))
    return p, xs, wants


def test_linear_paths_on_host():
    p, xs, wants = linear_program(np.random.default_rng(5), CASES)
    for got, want, case in zip(run_on_host(p, xs), wants, CASES):
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=str(case))
        assert len(np.unique(want)) > 1 or case[-1], f"a case that cannot fail: {case}"


@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547", "mps2-an386"])
def test_linear_vector_paths_on_qemu(qemu_tools, tmp_path, board):
    from mcu_gen.device.runner import run
    from mcu_gen.plan import planner
    from mcu_gen.program import pte

    p, xs, wants = linear_program(np.random.default_rng(6), CASES)
    planner.plan(p)
    path = tmp_path / "linear.pte"
    path.write_bytes(pte.write(p))
    r = run(pte_path=path, board=board, out=tmp_path / board, inputs=[xs], backend="portable", kernels="library",
            cycles=False)
    assert r.verified and r.bit_exact, r
    for got, want, case in zip(r.outputs[0], wants, CASES):
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{board} {case}")
