"""The int8 max pool (kernels_portable/int8_pool.h: cortex_m::quantized_max_pool2d, its _nhwc form and the
in-place variant mcu::quantized_max_pool2d_inplace) against PyTorch: max_pool2d of the int8 values (exact
in float) clamped to the activation range, byte for byte. Its paths: kernel 2x2 without padding (every
window inside, max_pool_2x2) and any other window (clipped once, max_window); per core 16 channels a pass
(MVE, Cortex-M55), 4 a pass (SSUB8 + SEL, Cortex-M33/M4) and one a pass (the host, and the channels the
others leave). The host runs one path, QEMU mps2-an505 / mps2-an386 the DSP one and mps3-an547 the MVE one.

Every case: odd sizes, strides 1 to 3 (unequal in H and W too), padding, kernels 1x1 to 5x5, channel
counts that are not multiples of 4 (nor of 16), batch 2, activation ranges narrower than int8; in place
where the planner's rule pool_forward allows it (each case's input is made by a zero cortex_m::pad, so it
dies at the pool). Dilation, ceil_mode and unequal zero points are refused (as ExecuTorch's reference),
with a clean kernel failure."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.plan import inplace as rules
from mcu_gen.plan import inplace_pass, planner
from mcu_gen.program.ir import Instruction, Program, TensorValue
from mcu_gen.reference import integer

NHWC = (0, 2, 3, 1)
BASE, INPLACE = "cortex_m::quantized_max_pool2d.out", "mcu::quantized_max_pool2d_inplace.out"

# (input NCHW, kernel, stride, padding, (activation_min, activation_max))
CASES = (
    ((1, 8, 26, 26), (2, 2), (2, 2), (0, 0), (-128, 127)),  # MNIST's first pool
    ((1, 16, 11, 11), (2, 2), (2, 2), (0, 0), (-5, 127)),  # MNIST's second (odd size: last row unused)
    ((2, 5, 9, 7), (2, 2), (1, 1), (0, 0), (-128, 100)),  # stride 1, batch 2
    ((1, 7, 10, 11), (2, 2), (3, 3), (0, 0), (-128, 127)),  # stride 3
    ((1, 9, 12, 13), (2, 2), (2, 3), (0, 0), (-20, 20)),  # unequal strides
    ((2, 4, 5, 5), (2, 2), (2, 2), (1, 1), (-128, 127)),  # 2x2 with padding: clipped windows
    ((1, 3, 7, 6), (3, 3), (2, 2), (1, 1), (-10, 127)),
    ((1, 13, 9, 9), (3, 3), (3, 3), (1, 1), (-128, 127)),
    ((1, 20, 8, 5), (3, 2), (1, 2), (1, 1), (-128, 50)),  # not in place (pool_forward)
    ((1, 37, 6, 6), (3, 3), (1, 1), (0, 0), (-128, 127)),  # 2 x 16 + 5 and 9 x 4 + 1 channels
    ((1, 1, 5, 5), (5, 5), (1, 1), (2, 2), (0, 127)),  # not in place
    ((1, 24, 5, 3), (1, 1), (1, 1), (0, 0), (-1, 1)),
    ((1, 6, 3, 9), (2, 4), (2, 3), (1, 2), (-128, 127)),
    ((1, 32, 4, 4), (2, 2), (2, 2), (0, 0), (-128, 127)),
)


def torch_max_pool(x: np.ndarray, k, s, p, act) -> np.ndarray:
    """PyTorch's max_pool2d of the int8 values (exact in float32), clamped: NCHW int8."""
    y = torch.nn.functional.max_pool2d(torch.from_numpy(x.astype(np.float32)), k, s, p)
    return torch.clamp(y, act[0], act[1]).to(torch.int8).numpy()


def pool_program(cases, zero_point=3, dilation=(1, 1), ceil_mode=False, out_zero_point=None):
    """One program: per case an input (NHWC int8), a zero cortex_m::pad of it (so the pool's input dies
    at the pool: in place where the rule allows) and the max pool; every pool's output is an output."""
    p = Program()
    for x_shape, k, s, pad, act in cases:
        n, c, h, w = x_shape
        oh = (h + 2 * pad[0] - k[0]) // s[0] + 1
        ow = (w + 2 * pad[1] - k[1]) // s[1] + 1
        x = p.add(TensorValue(x_shape, "int8", dim_order=NHWC, scale=0.1, zero_point=zero_point))
        t = p.add(TensorValue(x_shape, "int8", dim_order=NHWC, scale=0.1, zero_point=zero_point))
        p.instructions.append(Instruction("cortex_m::pad.out", [
            x, p.add_scalar("int_list", [0, 0, 0, 0]), p.add_scalar("int_list", [0, 0, 0, 0]),
            p.add_scalar("int", zero_point), t, t]))
        out = p.add(TensorValue((n, c, oh, ow), "int8", dim_order=NHWC, scale=0.1, zero_point=zero_point))
        p.instructions.append(Instruction(BASE, [
            t, p.add_scalar("int_list", list(k)), p.add_scalar("int_list", list(s)),
            p.add_scalar("int_list", list(pad)), p.add_scalar("int_list", list(dilation)),
            p.add_scalar("bool", ceil_mode), p.add_scalar("int", zero_point),
            p.add_scalar("int", zero_point if out_zero_point is None else out_zero_point),
            p.add_scalar("int", act[0]), p.add_scalar("int", act[1]), out, out]))
        p.inputs.append(x)
        p.outputs.append(out)
    return p


def random_inputs(rng, cases):
    xs = []
    for x_shape, *_ in cases:
        x = rng.integers(-128, 128, x_shape).astype(np.int8)
        x.reshape(-1)[:2] = (-128, 127)  # the extremes
        xs.append(x)
    return xs


def plan_in_place(p: Program) -> Program:
    """The planner with every in-place pair the rules allow (the in-place pass keeps its pairs only where
    the arena shrinks, which one small pool among larger inputs does not); the planner proves the plan
    against the kernels' rules (check_plan)."""
    kernels = rules.default_kernels()

    def every_pair(q, limit, fixed, reserve):
        q.meta["inplace"] = []
        inplace_pass.apply_inplace(q, inplace_pass.find_inplace(q, planner.lifetimes(q), kernels))
        return planner.layout(q, limit, fixed, reserve)

    return planner.plan_methods(p, None, kernels, choose=every_pair)


def planned_in_place(p: Program) -> list:
    """The pools the in-place pass switched to the in-place variant, each over its input's memory."""
    pools = [ins for ins in p.instructions if ins.op in (BASE, INPLACE)]
    for ins in pools:
        if ins.op == INPLACE:
            assert p.tensor(ins.args[-1]).offset == p.tensor(ins.args[0]).offset
    return [ins.op == INPLACE for ins in pools]


def expected(xs, cases):
    return [torch_max_pool(x, k, s, pad, act) for x, (_, k, s, pad, act) in zip(xs, cases)]


def stored(x):
    """run_on_host takes and gives a tensor's bytes in memory order (NHWC here) under its logical shape."""
    return np.ascontiguousarray(x.transpose(NHWC)).reshape(x.shape)


def to_nchw(raw, want):
    return raw.reshape(-1).reshape([want.shape[d] for d in NHWC]).transpose(0, 3, 1, 2)


def test_max_pool_matches_pytorch_on_host():
    """Every case, in place where the rule allows (all but the two whose windows start before their output
    pixel), on the host's path; mcu-gen's integer reference (what the devices are verified against) equals PyTorch too."""
    rng = np.random.default_rng(25)
    p = plan_in_place(pool_program(CASES))
    in_place = planned_in_place(p)
    assert all(in_place[:8]) and not in_place[8] and not in_place[10] and sum(in_place) == 12, in_place
    xs = random_inputs(rng, CASES)
    outs = run_on_host(p, [stored(x) for x in xs])
    for x, raw, want, case in zip(xs, outs, expected(xs, CASES), CASES):
        _, k, s, pad, act = case
        np.testing.assert_array_equal(to_nchw(raw, want), want, err_msg=str(case))
        ref = integer.quantized_max_pool2d(x, list(k), list(s), list(pad), [1, 1], False, 3, 3, *act)
        np.testing.assert_array_equal(ref, want, err_msg=f"integer reference {case}")


def test_max_pool_nhwc_form_and_not_in_place():
    """cortex_m::quantized_max_pool2d_nhwc (logical NHWC, contiguous) and the base operator with the
    in-place pass off: the same bytes."""
    rng = np.random.default_rng(26)
    cases = CASES[:6] + CASES[8:10]
    p = pool_program(cases)
    inplace_pass.plan_memory(p, allow_inplace=False)
    assert not any(planned_in_place(p))
    xs = random_inputs(rng, cases)
    for raw, want, case in zip(run_on_host(p, [stored(x) for x in xs]), expected(xs, cases), cases):
        np.testing.assert_array_equal(to_nchw(raw, want), want, err_msg=str(case))
    q = Program()
    wants = []
    for x, (x_shape, k, s, pad, act) in zip(xs, cases):
        want = torch_max_pool(x, k, s, pad, act)
        xi = q.add(TensorValue(tuple(x.transpose(0, 2, 3, 1).shape), "int8"))
        out = q.add(TensorValue(tuple(want.transpose(0, 2, 3, 1).shape), "int8"))
        q.instructions.append(Instruction("cortex_m::quantized_max_pool2d_nhwc.out", [
            xi, q.add_scalar("int_list", list(k)), q.add_scalar("int_list", list(s)),
            q.add_scalar("int_list", list(pad)), q.add_scalar("int_list", [1, 1]), q.add_scalar("bool", False),
            q.add_scalar("int", -7), q.add_scalar("int", -7), q.add_scalar("int", act[0]),
            q.add_scalar("int", act[1]), out, out]))
        q.inputs.append(xi)
        q.outputs.append(out)
        wants.append(want.transpose(0, 2, 3, 1))
    got = run_on_host(q, [np.ascontiguousarray(x.transpose(0, 2, 3, 1)) for x in xs])
    for raw, want, case in zip(got, wants, cases):
        np.testing.assert_array_equal(raw.reshape(want.shape), want, err_msg=f"nhwc {case}")


@pytest.mark.parametrize("bad", ["dilation", "ceil_mode", "zero_points", "range"])
def test_max_pool_refuses_what_it_does_not_compute(bad):
    """Dilation, ceil_mode and unequal zero points (ExecuTorch's reference refuses them too) and an
    activation range outside int8: a clean KernelFailed, not a wrong answer."""
    case = ((1, 5, 6, 6), (2, 2), (2, 2), (0, 0), (-128, 200) if bad == "range" else (-128, 127))
    p = pool_program([case], dilation=(2, 2) if bad == "dilation" else (1, 1), ceil_mode=bad == "ceil_mode",
                     out_zero_point=4 if bad == "zero_points" else None)
    with pytest.raises(HostRunError, match="KernelFailed"):
        run_on_host(p, random_inputs(np.random.default_rng(0), [case]))


@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547", "mps2-an386"])
def test_max_pool_vector_paths_on_qemu(qemu_tools, tmp_path, board):
    """The DSP path (4 channels a word, SSUB8 + SEL: Cortex-M33 and M4) and the MVE path (16 a vector,
    predicated: Cortex-M55) on QEMU, in place and not: the device's outputs equal PyTorch's, and the
    run is verified bit for bit against mcu-gen's integer reference."""
    from mcu_gen.device.runner import run
    from mcu_gen.program import pte

    rng = np.random.default_rng(27)
    p = plan_in_place(pool_program(CASES))
    assert sum(planned_in_place(p)) >= 3
    path = tmp_path / "max_pools.pte"
    path.write_bytes(pte.write(p))
    xs = random_inputs(rng, CASES)
    r = run(pte_path=path, board=board, out=tmp_path / board, inputs=[xs], backend="portable", cycles=False)
    assert r.verified and r.bit_exact, r
    assert INPLACE in (tmp_path / board / "report.json").read_text()
    for got, want, case in zip(r.outputs[0], expected(xs, CASES), CASES):  # the link gives logical layouts
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{board} {case}")
