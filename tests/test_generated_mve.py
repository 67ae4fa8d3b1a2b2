"""mcu-gen's generated MVE kernels for the Cortex-M55 (mcu_gen/backends/generated_mve.py).

The MVE code cannot run on the host, so the layers run on QEMU mps3-an547 (which executes MVE):
one program holds many independent layers of generated shapes and parameters — odd pixel counts,
channel and K counts that are not multiples of 16 (tails), strided and padded depthwise layers
(every pixel a border pixel; more than 127 channels), in-place variants, fully connected layers,
and all three requantization modes (fast, vector with left shifts, scalar) — and the device's
outputs must equal the host integer reference bit for bit, with every layer generated (the
report says so) and fewer instructions than the library kernels. The host tests check the
weight order, the choice of the requantization mode, the load-time checks and that the file
compiles for the Cortex-M55.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from mcu_gen.backends import generated, generated_mve, kernels
from mcu_gen.backends.generated import mve_add
from mcu_gen.backends.generated.layers import ADD_OPS, AddLayer
from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte
from mcu_gen.program.ir import Program

from test_generated_kernels import (RESNET8_ADD, add_program, conv_program, depthwise_program,  # noqa: E402
                                    linear_program, pointwise_program, with_relu)

BOARD = "mps3-an547"


def merged(programs, allow_inplace: bool = True) -> Program:
    """One program running each of `programs`' instructions on its own inputs and outputs."""
    m = Program()
    for p in programs:
        base = len(m.values)
        for v in p.values:
            if hasattr(v, "offset"):
                v.offset = None
            m.values.append(v)
        for ins in p.instructions:
            ins.args = [a + base for a in ins.args]
            m.instructions.append(ins)
        m.inputs += [i + base for i in p.inputs]
        m.outputs += [o + base for o in p.outputs]
    inplace_pass.plan_memory(m, allow_inplace=allow_inplace)  # in-place variants where the planner's rules place them (the builder reverts those without a generated form)
    return m


def scalar_mode_pointwise(rng) -> Program:
    """A left shift of 15 on accumulators that may reach 2^19: the vector VSHL could overflow, so
    the generator must take the scalar requantization."""
    p = pointwise_program(rng, 3, 3, 16, 8)
    shifts = p.values[p.instructions[0].args[9]]
    shifts.data = np.full(8, -9, np.int32)
    shifts.data[2] = 15
    return p


def cases(rng):
    """(name, program, expected requantization mode)."""
    return [
        ("pointwise 5x5 24->12 (25 pixels, K tail 8), left shift", pointwise_program(rng, 5, 5, 24, 12), "vector"),
        ("pointwise 3x3 64->20, right shifts", pointwise_program(rng, 3, 3, 64, 20, left_shift=False), "fast"),
        ("pointwise 3x5 40->8", pointwise_program(rng, 3, 5, 40, 8, left_shift=False), "fast"),
        ("pointwise scalar requantization", scalar_mode_pointwise(rng), "scalar"),
        ("pointwise 8x8 16->16 (in place, K one chunk: se_hardswish's, GCC ran out of even registers)",
         pointwise_program(rng, 8, 8, 16, 16, left_shift=False), "fast"),
        ("conv 10x4 1->8, 12x6, stride 2, padding 4,1", conv_program(rng, 12, 6, 1, 8, 10, 4, (2, 2), (4, 1)), "fast"),
        ("conv 3x3 3->8, 11x9, stride 2, padding 1 (27 taps)", conv_program(rng, 11, 9, 3, 8, 3, 3, (2, 2), (1, 1)),
         "fast"),
        ("conv 3x3 3->8, 6x8, padding 1 (a right-edge pixel second of its pair, as ResNet-8's stem)",
         conv_program(rng, 6, 8, 3, 8, 3, 3, (1, 1), (1, 1)), "fast"),
        ("conv 3x3 16->12, 5x5, padding 1", conv_program(rng, 5, 5, 16, 12, 3, 3, (1, 1), (1, 1)), "fast"),
        ("conv 1x1 stride 2, left shift", conv_program(rng, 7, 7, 8, 4, 1, 1, (2, 2), (0, 0), left_shift=True),
         "vector"),
        ("depthwise 5x5x20", depthwise_program(rng, 5, 5, 20), "fast"),
        ("depthwise 9x8x8 stride 2", depthwise_program(rng, 9, 8, 8, stride=2), "fast"),
        ("depthwise 1x3x4 (all border)", depthwise_program(rng, 1, 3, 4), "fast"),
        ("depthwise 6x5x12 padding 0", depthwise_program(rng, 6, 5, 12, pad=0), "fast"),
        ("depthwise 3x4x132 (rows of 44 channels)", depthwise_program(rng, 3, 4, 132), "fast"),
        ("depthwise 2x3x132 (pixels 132 bytes apart in the ring)", depthwise_program(rng, 2, 3, 132), "fast"),
        ("depthwise 24x5x8 (in place: the scratch holds 4 channels, a stack ring all 8)", depthwise_program(rng, 24, 5, 8), "fast"),
        ("depthwise 30x4x8 stride 2 (in place: a stack ring of all 8 channels)", depthwise_program(rng, 30, 4, 8, stride=2),
         "fast"),
        ("depthwise 40x3x4 padding 0", depthwise_program(rng, 40, 3, 4, pad=0), "fast"),
        ("depthwise 4x4x16 stride 2, left shift", depthwise_program(rng, 4, 4, 16, stride=2, left_shift=True),
         "vector"),
        ("depthwise 7x6x8 stride 2", depthwise_program(rng, 7, 6, 8, stride=2), "fast"),
        ("linear 1x40->8 (K tail 8), kernel sum", linear_program(rng, 1, 40, 8), "fast"),
        ("linear 3x128->20, bias", linear_program(rng, 3, 128, 20, kernel_sum=False), "fast"),
        # The fused blocks' clamp of an activation range of [-128, 127] (two saturating narrows, VQMOVNB),
        # and a convolution in place whose inner windows are read through the ring of rows (MacD).
        ("depthwise 7x5x16, activations in [-128, 127]", int8_range(depthwise_program(rng, 7, 5, 16), 12), "fast"),
        ("pointwise 3x3 40->8 (K tail 8), activations in [-128, 127]",
         int8_range(pointwise_program(rng, 3, 3, 40, 8, left_shift=False), 11), "fast"),
        ("conv 3x3 16->16, 6x7, padding 1, in place (inner windows read through the ring)",
         conv_program(rng, 6, 7, 16, 16, 3, 3, (1, 1), (1, 1), inplace=True), "fast"),
        ("depthwise 30x12x8 (in place: a ring of 8 channels in the scratch)", depthwise_program(rng, 30, 12, 8), "fast"),
        ("pointwise 5x3 16->32 (widening: in place, rows from the last)",
         pointwise_program(rng, 5, 3, 16, 32, left_shift=False), "fast"),
        # Under a fused ReLU (act_min = the output offset): the requantizations without the round-half-away fix-up
        # (emit_mve.requant_variants), in the clamping and the full-range variants (an offset of -128)
        ("pointwise 3x3 64->20, ReLU", with_relu(pointwise_program(rng, 3, 3, 64, 20, left_shift=False)), "fast"),
        ("depthwise 5x5x20, ReLU", with_relu(depthwise_program(rng, 5, 5, 20)), "fast"),
        ("conv 3x3 16->16, 6x7, padding 1, in place, ReLU",
         with_relu(conv_program(rng, 6, 7, 16, 16, 3, 3, (1, 1), (1, 1), inplace=True)), "fast"),
        ("depthwise 7x5x16, ReLU of an offset of -128", relu_full(depthwise_program(rng, 7, 5, 16)), "fast"),
        ("pointwise 3x3 40->8, ReLU of an offset of -128",
         relu_full(pointwise_program(rng, 3, 3, 40, 8, left_shift=False)), "fast"),
        # Channels not a multiple of 4 (depthwise3x3_part): a last group of 1 to 3 channels stored predicated, passes
        # of fewer channels than all (a last pass of the rest), the scalar and vector requantizations, a ReLU
        ("depthwise 6x5x3", depthwise_program(rng, 6, 5, 3), "fast"),
        ("depthwise 7x6x9 stride 2", depthwise_program(rng, 7, 6, 9, stride=2), "fast"),
        ("depthwise 6x6x13", depthwise_program(rng, 6, 6, 13), "fast"),
        ("depthwise 9x9x6 stride 2", depthwise_program(rng, 9, 9, 6, stride=2), "fast"),
        ("depthwise 6x7x5 padding 0", depthwise_program(rng, 6, 7, 5, pad=0), "fast"),
        ("depthwise 5x6x7, left shift", depthwise_program(rng, 5, 6, 7, left_shift=True), "vector"),
        ("depthwise 5x40x17 (a pass of 16 channels, then one of 1)", depthwise_program(rng, 5, 40, 17), "fast"),
        ("depthwise 3x4x131 (passes of 28 channels and one of 19, pixels 131 bytes apart)",
         depthwise_program(rng, 3, 4, 131), "fast"),
        ("depthwise 26x5x10 (in place: a stack ring of all 10 channels, the scratch holding 4)",
         depthwise_program(rng, 26, 5, 10), "fast"),
        ("depthwise 40x6x17 (in place: passes of 8 channels through the scratch, then one of 1)",
         depthwise_program(rng, 40, 6, 17), "fast"),
        ("depthwise 7x5x15, ReLU", with_relu(depthwise_program(rng, 7, 5, 15)), "fast"),
        ("depthwise 6x5x1", depthwise_program(rng, 6, 5, 1), "fast"),
        # Kernels other than 3x3, and 3x3 with padding 2 (depthwise_kxk: a ring of kh rows, a DwRow block per kernel
        # row): MobileNetV3's 5x5, a Conv1d's 1 x 5 with a column stride of 2 over one row, 7x7 with padding 3, 5x5
        # stride 2, 5x3 with a left shift
        ("depthwise 7x7x16 5x5 padding 2", depthwise_program(rng, 7, 7, 16, pad=2, k=5), "fast"),
        ("depthwise 1x40x8 1x5 column stride 2", depthwise_program(rng, 1, 40, 8, pad=0, k=1, kw=5, stride_w=2,
                                                                   pad_w=2), "fast"),
        ("depthwise 9x10x4 7x7 padding 3", depthwise_program(rng, 9, 10, 4, pad=3, k=7), "fast"),
        ("depthwise 11x9x8 5x5 stride 2", depthwise_program(rng, 11, 9, 8, stride=2, pad=2, k=5), "fast"),
        ("depthwise 6x6x4 5x3, left shift", depthwise_program(rng, 6, 6, 4, pad=1, k=5, kw=3, left_shift=True),
         "vector"),
        ("depthwise 8x7x8 3x3 padding 2", depthwise_program(rng, 8, 7, 8, pad=2), "fast"),
        ("depthwise 14x14x8 5x5", depthwise_program(rng, 14, 14, 8, pad=2, k=5), "fast"),
        ("depthwise 2x3x132 1x3 (pixels 132 bytes apart in the ring: an ADD per tap)",
         depthwise_program(rng, 2, 3, 132, pad=0, k=1, kw=3), "fast"),
        # One row whose padded ring passes 528 B (a Conv1d over 300 samples): chunks of 62 output pixels, their input
        # columns in the ring (depthwise_cols); stride 2 over 400 samples
        ("depthwise 1x300x8 1x5 in chunks", depthwise_program(rng, 1, 300, 8, pad=0, k=1, kw=5, pad_w=2), "fast"),
        ("depthwise 1x400x4 1x3 column stride 2 in chunks",
         depthwise_program(rng, 1, 400, 4, pad=0, k=1, kw=3, stride_w=2, pad_w=1), "fast"),
        # ... over channel counts that are not multiples of 4 (depthwise_kxk, depthwise_cols: the pass of the rest
        # first, its last group of 1 to 3 channels stored predicated): fewer than 4 channels, passes of 12 then 1,
        # chunks of a Conv1d over 7 channels, a left shift, a fused ReLU
        ("depthwise 7x7x6 5x5 padding 2", depthwise_program(rng, 7, 7, 6, pad=2, k=5), "fast"),
        ("depthwise 9x9x13 5x5 stride 2", depthwise_program(rng, 9, 9, 13, stride=2, pad=2, k=5), "fast"),
        ("depthwise 1x300x7 1x5 in chunks", depthwise_program(rng, 1, 300, 7, pad=0, k=1, kw=5, pad_w=2), "fast"),
        ("depthwise 6x6x3 5x3, left shift", depthwise_program(rng, 6, 6, 3, pad=1, k=5, kw=3, left_shift=True),
         "vector"),
        ("depthwise 8x7x10 3x3 padding 2, ReLU", with_relu(depthwise_program(rng, 8, 7, 10, pad=2)), "fast"),
        # Output channels / sizes not multiples of 4 (the last block of 1 to 3 channels stored predicated), input
        # channels not multiples of 4 read straight (a predicated last chunk of K, rows K bytes apart): classifier heads
        # of 10 and 2 classes, 1x1 and k x k layers of random networks (bench/sweep_random_cnn.py)
        ("linear 1x64->10", linear_program(rng, 1, 64, 10), "fast"),
        ("linear 3x35->2, bias", linear_program(rng, 3, 35, 2, kernel_sum=False), "fast"),
        ("linear 2x21->7", linear_program(rng, 2, 21, 7), "fast"),
        ("pointwise 5x3 16->6 (a last block of 2 channels, 15 pixels)", pointwise_program(rng, 5, 3, 16, 6, left_shift=False),
         "fast"),
        ("pointwise 4x4 6->10, left shift", pointwise_program(rng, 4, 4, 6, 10), "vector"),
        ("pointwise 3x5 13->3", pointwise_program(rng, 3, 5, 13, 3, left_shift=False), "fast"),
        ("pointwise 3x3 7->17, ReLU", with_relu(pointwise_program(rng, 3, 3, 7, 17, left_shift=False)), "fast"),
        ("conv 3x3 5->7, 6x5, padding 1", conv_program(rng, 6, 5, 5, 7, 3, 3, (1, 1), (1, 1)), "fast"),
        ("conv 5x5 3->1, 9x8, stride 2", conv_program(rng, 9, 8, 3, 1, 5, 5, (2, 2), (0, 0)), "fast"),
        ("conv 3x3 8->10, 6x7, padding 1, in place", conv_program(rng, 6, 7, 8, 10, 3, 3, (1, 1), (1, 1), inplace=True),
         "fast"),
        # The two gathered windows in the scratch tensor (where the arena has room), not on the stack: after the ring
        # of an in-place convolution, or at the start
        ("conv 3x3 72->8, 4x5, padding 1 (windows of 656 bytes: one at a time on the stack)",
         conv_program(rng, 4, 5, 72, 8, 3, 3, (1, 1), (1, 1)), "fast"),
        ("conv 3x3 16->12, 5x5, padding 1, windows in the scratch",
         windows_in_scratch(conv_program(rng, 5, 5, 16, 12, 3, 3, (1, 1), (1, 1))), "fast"),
        ("conv 3x3 8->10, 6x7, padding 1, in place, windows after the ring",
         windows_in_scratch(conv_program(rng, 6, 7, 8, 10, 3, 3, (1, 1), (1, 1), inplace=True), inplace=True), "fast"),
    ]


WINDOWS_IN_SCRATCH = 1  # cases() whose convolution keeps its windows in the scratch tensor once merged() plans it in place


def windows_in_scratch(p: Program, inplace: bool = False) -> Program:
    """The convolution's scratch tensor grown to hold its two gathered windows (after an in-place layer's ring)
    and the program planned again: what mcu_gen/plan/generated_scratch.py gives an MVE convolution where the
    arena has room."""
    from mcu_gen.plan.generated_scratch import scratch_candidates

    for _, t, sizes in scratch_candidates(p, "mve"):
        t.shape, t.dtype = (max(t.nbytes if t.dtype == "int8" else 0, sizes[0]),), "int8"
    inplace_pass.plan_memory(p, allow_inplace=inplace)
    return p


def relu_full(p: Program) -> Program:
    """A fused ReLU whose range is all of int8: the output offset -128 (every output value's argument and the
    output tensor's zero point), the activation range [-128, 127]."""
    ins = p.instructions[0]
    lo = 11 if "depthwise" in ins.op else 10
    out_zp = 8 if "depthwise" in ins.op else 7
    assert p.values[ins.args[out_zp]].value == -2 and p.values[ins.args[lo]].value == -128
    p.values[ins.args[out_zp]].value = -128
    p.values[ins.args[lo + 1]].value = 127
    p.tensor(ins.args[-1]).zero_point = -128
    return p


def int8_range(p: Program, arg: int) -> Program:
    """The instruction's activation maximum (argument `arg`) set to 127: the range is all of int8."""
    p.values[p.instructions[0].args[arg]].value = 127
    return p


def test_gemm_weight_order():
    """Per block of 4 channels, per chunk of 16 inputs, per channel 16 weights; zero padding."""
    w = (np.arange(6 * 20) % 100).astype(np.int8).reshape(6, 20)  # w[n][k] = 20n + k (mod 100)
    p = generated_mve.pack_gemm_weights(w)
    assert p.size == 2 * 2 * 4 * 16  # 2 blocks of 4 channels, 2 chunks of 16
    assert list(p[:16]) == list(w[0, :16])  # block 0, chunk 0, channel 0
    assert list(p[16:32]) == list(w[1, :16])  # channel 1
    assert list(p[64:68]) == list(w[0, 16:20]) and not p[68:80].any()  # chunk 1: 4 weights, 12 zeros
    assert list(p[128:144]) == list(w[4, :16])  # block 1, channel 4
    assert not p[128 + 32:128 + 64].any()  # channels 6 and 7 pad the last block


def test_ring_plan():
    """The depthwise ring: in the scratch where it holds 8 channels or more (or all of them), else a stack
    ring of at most RING_STACK_SMALL bytes with more channels than the scratch would hold, else the scratch."""
    from types import SimpleNamespace as L

    def plan(h, w, c, scratch):
        return generated_mve.ring_plan(L(w=w, pad_w=1, c=c, kh=3, inplace_ok=True, scratch_bytes=scratch))

    assert plan(25, 5, 64, 125) == (16, False)  # KWS: the scratch holds 4 channels; 336 bytes of stack hold 16
    assert plan(30, 12, 8, 360) == (8, True)  # 8 channels in the scratch
    assert plan(6, 5, 4, 90) == (4, True)  # all channels
    assert plan(9, 30, 8, 384) == (4, True)  # a stack ring of 8 channels would take 768 bytes: the scratch
    # not in place: all 64 channels would take 1,344 bytes of stack, over RING_STACK_BYTES: passes of 16
    assert generated_mve.ring_plan(L(w=5, pad_w=1, c=64, kh=3, inplace_ok=False, scratch_bytes=0)) == (16, False)
    # channels not a multiple of 4: groups of any multiple of 4 (the last pass the rest), all of them rounded up to 4
    assert generated_mve.ring_plan(L(w=5, pad_w=1, c=17, kh=3, inplace_ok=False, scratch_bytes=0)) == (20, False)
    # 4 channels of 42-pixel rows take 504 bytes: RING_STACK_BYTES (528) holds no more
    assert generated_mve.ring_plan(L(w=40, pad_w=1, c=17, kh=3, inplace_ok=False, scratch_bytes=0)) == (4, False)
    assert plan(26, 5, 10, 130) == (12, False)  # the scratch holds 4 channels; 252 bytes of stack hold all 10
    assert plan(40, 6, 17, 240) == (8, True)  # passes of 8, 8 and 1 channels in the scratch


def test_requant_mode():
    m = np.full(4, 2**30, np.int32)
    assert generated_mve.requant_mode(m, np.array([-1, -5, -31, -8]), np.full(4, 10**6)) == "fast"
    assert generated_mve.requant_mode(m, np.array([0, -5, -3, -8]), np.full(4, 10**6)) == "vector"  # shift 0
    assert generated_mve.requant_mode(m, np.array([3, -5, -3, -8]), np.full(4, 10**6)) == "vector"
    assert generated_mve.requant_mode(m, np.array([12, -5, -3, -8]), np.full(4, 10**6)) == "scalar"  # 2^31 < 2^32
    assert generated_mve.requant_mode(m, np.array([-32, -5, -3, -8]), np.full(4, 10)) == "scalar"


def compile_for_the_m55(source: str, tmp_path) -> None:
    """Cross-compiles a generated file for the Cortex-M55: no error, no warning (-Wall)."""
    from mcu_gen.paths import KERNELS_PORTABLE, RUNTIME_CORE

    src = tmp_path / generated_mve.GENERATED_FILE
    src.write_text(source)
    r = subprocess.run(["arm-none-eabi-g++", "-std=c++17", "-O2", "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard",
                        "-fno-exceptions", "-fno-rtti", "-Wall", "-Wno-psabi", "-DMCU_KERNEL_PREPARE=1",
                        "-I", str(RUNTIME_CORE / "include"), "-I", str(KERNELS_PORTABLE), "-c", str(src),
                        "-o", str(tmp_path / "g.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "warning" not in r.stderr, r.stderr[-3000:]


def test_source_compiles_for_the_m55(tmp_path):
    """The generated file of all cases compiles for the Cortex-M55 (-Werror on the layer code)."""
    if shutil.which("arm-none-eabi-g++") is None:
        pytest.skip("no arm-none-eabi-g++")
    rng = np.random.default_rng(3)
    p = merged([c[1] for c in cases(rng)], allow_inplace=False)
    lib = kernels.find_kernels()
    g = generated_mve.generate(p, [lib[op] for op in p.operators])
    assert len(g.layers) == len(p.instructions), g.skipped
    assert "vmladava.s8" in g.source and "vctp.8" in g.source and "Dw28_1_131" in g.source
    compile_for_the_m55(g.source, tmp_path)


def test_not_on_dsp_only_cores():
    from mcu_gen.boards import get_board

    assert generated_mve.board_supports(get_board("mps3-an547"))
    assert not generated_mve.board_supports(get_board("mps2-an505"))
    assert not generated.board_supports(get_board("mps3-an547"))


def test_mve_layers_are_bit_exact_on_qemu(qemu_tools, tmp_path):
    """Every case generated, bit-exact with the integer reference on QEMU mps3-an547, and faster than
    the library kernels (portable) on the same program."""
    from mcu_gen.device.runner import run

    rng = np.random.default_rng(11)
    cs = cases(rng)
    p = merged([c[1] for c in cs])
    path = tmp_path / "cases.pte"
    path.write_bytes(pte.write(p))
    rng_in = np.random.default_rng(5)
    inputs = [rng_in.integers(-128, 128, p.tensor(i).shape).astype(np.int8) for i in p.inputs]
    gen = run(pte_path=path, board=BOARD, out=tmp_path / "gen", inputs=[inputs], kernels="generated",
              backend="portable")
    assert gen.verified and gen.bit_exact, gen
    report = json.loads((tmp_path / "gen" / "report.json").read_text())
    layers = report["generated_kernels"]["layers"]
    assert [l["instruction"] for l in layers] == list(range(len(cs))), report["generated_kernels"]["skipped"]
    assert [l["requant"] for l in layers] == [c[2] for c in cs]
    assert report["generated_kernels"]["isa"] == "mve"
    assert all(op["backend"] == "generated" for op in report["operators"])
    source = (tmp_path / "gen" / "firmware" / "kernels" / "generated_kernels.cpp").read_text()
    assert source.count("Requant, ring + ") == WINDOWS_IN_SCRATCH
    assert source.count("int8_t patch[656];") == 1  # the 72->8 convolution's one window
    lib = run(pte_path=path, board=BOARD, out=tmp_path / "lib", inputs=[inputs], kernels="library", backend="portable")
    assert lib.verified and lib.bit_exact
    assert gen.instructions_per_inference < 0.5 * lib.instructions_per_inference


def test_mve_depthwise_not_in_place_on_qemu(qemu_tools, tmp_path):
    """The depthwise cases with outputs of their own (the ring on the stack, the input intact), and a convolution
    whose gathered windows are at the start of its scratch tensor: generated and bit-exact on QEMU mps3-an547, and
    the inputs unchanged."""
    from mcu_gen.device.runner import run

    rng = np.random.default_rng(12)
    cs = [c for c in cases(rng) if c[0].startswith("depthwise") or c[0].endswith("windows in the scratch")]
    p = merged([c[1] for c in cs], allow_inplace=False)
    assert [ins.op for ins in p.instructions].count("cortex_m::quantized_depthwise_conv2d.out") == len(cs) - 1
    assert p.instructions[-1].op == "cortex_m::quantized_conv2d.out"
    path = tmp_path / "dw.pte"
    path.write_bytes(pte.write(p))
    rng_in = np.random.default_rng(6)
    inputs = [rng_in.integers(-128, 128, p.tensor(i).shape).astype(np.int8) for i in p.inputs]
    gen = run(pte_path=path, board=BOARD, out=tmp_path / "gen", inputs=[inputs], kernels="generated",
              backend="portable")
    assert gen.verified and gen.bit_exact, gen
    layers = json.loads((tmp_path / "gen" / "report.json").read_text())["generated_kernels"]["layers"]
    assert len(layers) == len(cs)
    source = (tmp_path / "gen" / "firmware" / "kernels" / "generated_kernels.cpp").read_text()
    assert source.count("Requant, ring + 0)") == 1


def _run_example(tmp_path, name, kernels, backend="portable", **kw):
    from mcu_gen.device.runner import run

    return run(f"examples/{name}/model.py", board=BOARD, out=tmp_path / f"{name}-{backend}-{kernels}", quantize="int8",
               io="int8", backend=backend, kernels=kernels, n_random=1, **kw)


def test_kws_on_the_m55(qemu_tools, tmp_path):
    """KWS DS-CNN without CMSIS-NN (CI has none): the MVE kernels are bit-exact and faster than the
    portable kernels; with CMSIS-NN (MCU_GEN_CMSIS_NN) under issue 17's M55 target, else skipped there."""
    import os

    gen = _run_example(tmp_path, "kws_dscnn", "auto")
    lib = _run_example(tmp_path, "kws_dscnn", "library")
    assert gen.verified and gen.bit_exact and lib.verified and lib.bit_exact
    report = json.loads((tmp_path / "kws_dscnn-portable-auto" / "report.json").read_text())
    assert report["generated_kernels"]["isa"] == "mve" and len(report["generated_kernels"]["layers"]) >= 9
    assert "reordered int8 weights take" in (tmp_path / "kws_dscnn-portable-auto" / "report.md").read_text()
    assert gen.instructions_per_inference < 0.5 * lib.instructions_per_inference
    root = os.environ.get("MCU_GEN_CMSIS_NN")
    if not root:
        pytest.skip("CMSIS-NN not given (MCU_GEN_CMSIS_NN): the M55 target beside CMSIS-NN is not tested")
    cm = _run_example(tmp_path, "kws_dscnn", "auto", backend="cmsis-nn", cmsis_nn_path=root)
    assert cm.verified and cm.bit_exact
    assert cm.instructions_per_inference <= 1_270_000  # issue 17: 0.7x today's 1,811,006 on mps3-an547


# -- the elementwise add ----------------------------------------------------------------------------
TIES_ADD = (0, 2048, -1, 0, 2048, -2, 0, 1 << 30, -1, -128, 127)  # a = x / 2, b = y / 4, ties at every stage
LEFT_ADD = (5, 2048, 1, -3, 6144, -3, 2, 3 << 29, -2, -128, 127)  # a left shift of operand a
NEG_ADD = (7, -2048, -1, -9, 1518500250, -1, 4, -1073741823, -18, -100, 100)  # negative multipliers, ties
OUT_LEFT_ADD = (3, 1 << 30, -4, -3, 1 << 30, -5, -1, 1 << 30, 2, -128, 127)  # a left shift of the output


def _all_pairs(shape=(256, 256)):
    x, y = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    return x.astype(np.int8).reshape(shape), y.astype(np.int8).reshape(shape)


def _add_layer(params, numel=64):
    return AddLayer("layer_0", 0, ADD_OPS[0], numel, *params)


# add_reference against an arithmetic we did not write (CMSIS-NN's definition re-derived in plain
# integers, random and edge parameters): tests/test_generated_oracle.py. (The test that compared it
# with integer.quantized_add compared quantize/arith.py with itself.)


def test_add_plan_takes_the_cheapest_exact_sequence():
    """ResNet-8's adds: operand a needs the sign fix-up (right shift 1: ties), operand b (shift 0) a bare
    VQRDMULH, the output no fix-up (no tie among its sums) but both clamps; 16 instructions per 4
    elements. Ties at every stage need the fix-ups; a left shift folds into the VMLAS scale; a negative
    multiplier needs the fix-up from the product's sign; a left shift of the output is a VSHL."""
    p = generated_mve.add_plan(_add_layer(RESNET8_ADD))
    assert (p.variant_a, p.variant_b, p.variant_out, p.clamp_min, p.clamp_max) == ("sign", "mul", "plain", True, True)
    assert p.scale_a == p.scale_b == 1 << 20 and p.instructions_per_vector == 16
    p = generated_mve.add_plan(_add_layer(TIES_ADD))
    assert (p.variant_a, p.variant_b, p.variant_out) == ("sign", "sign", "sign")
    assert not p.clamp_min and not p.clamp_max  # |out| <= 24: no clamp reached
    p = generated_mve.add_plan(_add_layer(LEFT_ADD))
    assert p.scale_a == 1 << 21 and p.variant_a == "mul"
    p = generated_mve.add_plan(_add_layer(NEG_ADD))
    assert p.variant_a == "fixup", p  # a = round(-(x - 7) / 2): the sign of the product, not of x - 7
    p = generated_mve.add_plan(_add_layer(OUT_LEFT_ADD))
    assert p.out_left == 2 and p.variant_out == "mul"


def test_add_plan_is_exact_and_refuses_what_it_cannot_prove():
    """The chosen sequence, emulated, equals the reference on all 65,536 pairs, while a cheaper one
    differs (so the search had a reason); parameters without an exact sequence get a reason."""
    x, y = _all_pairs()
    for prm in (RESNET8_ADD, TIES_ADD, NEG_ADD):
        l = _add_layer(prm)
        plan = generated_mve.add_plan(l)
        a = mve_add.requant_emulated((x.astype(np.int64) - prm[0]) * plan.scale_a, prm[1], -prm[2],
                                     plan.variant_a)
        b = mve_add.requant_emulated((y.astype(np.int64) - prm[3]) * plan.scale_b, prm[4], -prm[5],
                                     plan.variant_b)
        r = mve_add.requant_emulated(mve_add.wrap_i32(a + b), prm[7], -prm[8], plan.variant_out) + prm[6]
        np.testing.assert_array_equal(np.clip(r, prm[9], prm[10]), generated_mve.add_reference(x, y, prm))
        if plan.variant_a != "mul":  # without the fix-up, operand a rounds some ties the other way
            cheaper = mve_add.requant_emulated((x.astype(np.int64) - prm[0]) * plan.scale_a, prm[1], -prm[2],
                                               "plain")
            assert not np.array_equal(cheaper, a)
    assert "right shift exceeds 31" in generated_mve.add_plan(_add_layer((0, 1 << 30, -40) + RESNET8_ADD[3:]))
    assert "32 bits" in generated_mve.add_plan(_add_layer((200, 1 << 30, 3) + RESNET8_ADD[3:]))  # 328 << 23
    # an output left shift of 20 overflows the 32-bit sum: VSHL cannot be exact
    assert "output" in generated_mve.add_plan(_add_layer(RESNET8_ADD[:7] + (1 << 30, 20, -128, 127)))


def test_broadcast_add_stays_on_the_library_kernel():
    p = add_program((1, 8, 4, 4), dim_order=(0, 2, 3, 1))
    p.values[p.instructions[0].args[4]].shape = (1, 8, 1, 1)
    layers, skipped = generated.eligible(p)
    assert layers == [] and "broadcast" in skipped[0][2]


def add_cases():
    """(name, program, inputs or None for random ones) of the QEMU add test."""
    return [
        ("ResNet-8's first residual add, 1x16x32x32 channels-last", add_program((1, 16, 32, 32), dim_order=(0, 2, 3, 1)),
         None),
        ("ties at every stage, every pair of int8 values", add_program((256, 256), TIES_ADD), _all_pairs()),
        ("ResNet-8's parameters, every pair of int8 values", add_program((256, 256), RESNET8_ADD), _all_pairs()),
        ("a left shift, 105 elements (a tail of 1)", add_program((1, 3, 5, 7), LEFT_ADD), None),
        ("negative multipliers, 42 elements (a tail of 2)", add_program((6, 7), NEG_ADD), None),
        ("an output left shift, 3 elements", add_program((3,), OUT_LEFT_ADD), None),
        ("in place over operand a, 2x3x7", add_program((2, 3, 7), chain="a"), None),
        ("in place over operand b, 2x3x7", add_program((2, 3, 7), TIES_ADD, chain="b"), None),
        ("one element", add_program((1, 1)), None),
    ]


def test_add_source_compiles_for_the_m55(tmp_path):
    if shutil.which("arm-none-eabi-g++") is None:
        pytest.skip("no arm-none-eabi-g++")
    p = merged([c[1] for c in add_cases()])
    lib = kernels.find_kernels()
    g = generated_mve.generate(p, [lib[op] for op in p.operators])
    assert len(g.layers) == len(p.instructions), g.skipped
    assert g.source.count("dlstp.32") == len(p.instructions) and "vqrdmlah.s32" in g.source
    compile_for_the_m55(g.source, tmp_path)


def test_mve_adds_are_bit_exact_on_qemu(qemu_tools, tmp_path):
    """Every add case generated (in place where the planner put it), bit-exact with the integer
    reference on QEMU mps3-an547, under 5 instructions per element over the whole program, and
    faster than the portable kernel."""
    from mcu_gen.device.runner import run

    cs = add_cases()
    p = merged([c[1] for c in cs])
    inplace = [(step["step"], step["out"], step["over"]) for step in p.meta["plan"].get("inplace", [])]
    assert any(ins.args[0] == over for step, _, over in inplace for ins in [p.instructions[step]])
    assert any(ins.args[4] == over for step, _, over in inplace for ins in [p.instructions[step]])
    path = tmp_path / "adds.pte"
    path.write_bytes(pte.write(p))
    rng = np.random.default_rng(6)
    inputs = []
    for _, prog, given in cs:
        n_in = len(prog.inputs)
        for k in range(n_in):
            shape = p.tensor(p.inputs[len(inputs)]).shape
            inputs.append(given[k] if given is not None else rng.integers(-128, 128, shape).astype(np.int8))
    gen = run(pte_path=path, board=BOARD, out=tmp_path / "gen", inputs=[inputs], kernels="generated",
              backend="portable")
    assert gen.verified and gen.bit_exact, gen
    report = json.loads((tmp_path / "gen" / "report.json").read_text())
    layers = report["generated_kernels"]["layers"]
    assert [l["instruction"] for l in layers] == list(range(len(p.instructions))), report["generated_kernels"]
    assert all(l["kind"] == "add" and l["requant"] == "vector" for l in layers)
    elements = sum(p.tensor(ins.args[13]).numel for ins in p.instructions)
    assert gen.instructions_per_inference < 5 * elements, (gen.instructions_per_inference, elements)
    lib = run(pte_path=path, board=BOARD, out=tmp_path / "lib", inputs=[inputs], kernels="library", backend="portable")
    assert lib.verified and lib.bit_exact
    assert gen.instructions_per_inference < 0.3 * lib.instructions_per_inference
