"""mcu-gen's generated int8 kernels (mcu_gen/backends/generated/), natively under ASan/UBSan.

Programs with generated shapes and parameters (1x1 convolutions, their in-place variant, fully
connected layers) run through the real runtime with the generated kernel file; their outputs
must equal the host integer reference (mcu_gen/reference/integer.py) bit for bit. The library
kernel of each operator is replaced by one that always fails, so a correct output proves the
generated layer ran; and a program whose weights differ from those the layer was generated for
must reach the library kernel (and fail here).

The host build uses the generated file's plain C++ definitions of SMLAD/SXTB16 (no
__ARM_FEATURE_DSP); the ARM intrinsics run on QEMU (tests/test_generated_firmware.py).
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from mcu_gen.backends import generated, kernels
from mcu_gen.backends.generated.exactness import add_dsp_plan, sign_free, smmlar_consts
from mcu_gen.backends.generated.external import EXTERNAL_MIN_BYTES, external_constants, external_key, owners_source
from mcu_gen.backends.generated.layers import ADD_OPS, CONV_ROWS_INPLACE, AddLayer, GemmLayer
from mcu_gen.firmware import host
from mcu_gen.firmware.size_report import pte_split
from mcu_gen.plan import inplace_pass, planner
from mcu_gen.program import pte
from mcu_gen.program.ir import Instruction, Program, TensorValue
from mcu_gen.reference.integer import run_int8_reference
from mcu_gen.paths import KERNELS_PORTABLE

NHWC = (0, 2, 3, 1)

FAILING = r"""// mcu-gen-kernel: op=cortex_m::quantized_conv2d.out fn=failing_conv sig=TTtLLLIITTIITOO dtypes=int8
// mcu-gen-kernel: op=mcu::quantized_conv2d_pointwise_inplace.out fn=failing_conv sig=TTtLLLIITTIITOO dtypes=int8
// mcu-gen-kernel: op=mcu::quantized_conv2d_rows_inplace.out fn=failing_conv sig=TTtLLLIITTIITOO dtypes=int8
// mcu-gen-kernel: op=cortex_m::quantized_linear.out fn=failing_linear sig=TTttIIILLIIOO dtypes=int8
// mcu-gen-kernel: op=cortex_m::quantized_depthwise_conv2d.out fn=failing_conv sig=TTtLLLIIITTIITOO dtypes=int8
// mcu-gen-kernel: op=mcu::quantized_depthwise_conv2d_inplace.out fn=failing_conv sig=TTtLLLIIITTIITOO dtypes=int8
// mcu-gen-kernel: op=cortex_m::quantized_add.out fn=failing_add sig=TIIITIIIIIIIIOO dtypes=int8
// Test stand-ins for the library kernels: they always fail, so only generated layers succeed.
#include "mcu/kernel.h"
namespace mcu {
namespace kernels {
Error failing_conv(const KernelContext&) { return Error::KernelFailed; }
Error failing_linear(const KernelContext&) { return Error::KernelFailed; }
Error failing_add(const KernelContext&) { return Error::KernelFailed; }
}  // namespace kernels
}  // namespace mcu
"""


def _requant_params(rng, n, lo=-12, hi=-5, left_shift=True):
    mults = rng.integers(2**30, 2**31 - 1, n).astype(np.int32)
    shifts = rng.integers(lo, hi, n).astype(np.int32)
    if n > 1 and left_shift:
        shifts[0] = 1  # one channel with a left shift
    return mults, shifts


def sized_scratch(p: Program, replan) -> Program:
    """``p`` with each smmlar GEMM layer's scratch tensor grown to hold its best per-call buffers
    (dsp_work.work_levels: windows or rows, then the widened pair of rows) and planned again (``replan``):
    what plan/generated_scratch.py size_scratch gives a layer where the arena has room."""
    from mcu_gen.backends.generated.dsp_work import scratch_levels as work_levels, work_bytes

    for l in generated.eligible(p)[0]:
        if l.requant_kind != "smmlar" or not work_levels(l):
            continue
        t = p.values[p.instructions[l.instruction].args[12]]
        need = l.scratch_at + work_bytes(l, *work_levels(l)[0])
        t.shape, t.dtype = (max(t.nbytes if t.dtype == "int8" else 0, need),), "int8"
    replan()
    return p


def pointwise_program(rng, h, w, cin, cout, inplace=False, left_shift=True, scratch=False) -> Program:
    p = Program()
    x = p.add(TensorValue((1, cin, h, w), "int8", dim_order=NHWC, scale=0.1, zero_point=3))
    wt = rng.integers(-127, 128, (cout, 1, 1, cin)).astype(np.int8)
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    mults, shifts = _requant_params(rng, cout, left_shift=left_shift)
    out = p.add(TensorValue((1, cout, h, w), "int8", dim_order=NHWC, scale=0.2, zero_point=-2))
    args = [x, p.add(TensorValue(wt.shape, "int8", data=wt)), p.add(TensorValue(bias.shape, "int32", data=bias)),
            p.add_scalar("int_list", [1, 1]), p.add_scalar("int_list", [0, 0]), p.add_scalar("int_list", [1, 1]),
            p.add_scalar("int", int(rng.integers(-128, 128))), p.add_scalar("int", -2),
            p.add(TensorValue(mults.shape, "int32", data=mults)), p.add(TensorValue(shifts.shape, "int32", data=shifts)),
            p.add_scalar("int", -128), p.add_scalar("int", 100), p.add(TensorValue((cin,), "int8")), out, out]
    op = "mcu::quantized_conv2d_pointwise_inplace.out" if inplace else "cortex_m::quantized_conv2d.out"
    p.instructions.append(Instruction(op, args))
    p.inputs, p.outputs = [x], [out]

    def plan():
        planner.plan(p)
        if inplace:  # the output over the input, as the planner's pointwise rule places it (widening: past it)
            p.tensor(out).offset = p.tensor(x).offset
            p.arena_size = max(p.arena_size, p.tensor(x).offset + max(p.tensor(x).nbytes, p.tensor(out).nbytes))
            t = p.values[args[12]]  # the scratch past the output moved over the input (widening: longer than it)
            t.offset = (p.arena_size + 15) // 16 * 16
            p.arena_size = t.offset + t.nbytes
    plan()
    return sized_scratch(p, plan) if scratch else p


def conv_program(rng, h, w, cin, cout, kh, kw, stride, pad, left_shift=False, inplace=False, scratch=False) -> Program:
    p = Program()
    x = p.add(TensorValue((1, cin, h, w), "int8", dim_order=NHWC, scale=0.1, zero_point=-7))
    wt = rng.integers(-127, 128, (cout, kh, kw, cin)).astype(np.int8)
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    mults, shifts = _requant_params(rng, cout, -12, -8, left_shift=left_shift)
    oh, ow = (h + 2 * pad[0] - kh) // stride[0] + 1, (w + 2 * pad[1] - kw) // stride[1] + 1
    out = p.add(TensorValue((1, cout, oh, ow), "int8", dim_order=NHWC, scale=0.2, zero_point=-2))
    args = [x, p.add(TensorValue(wt.shape, "int8", data=wt)), p.add(TensorValue(bias.shape, "int32", data=bias)),
            p.add_scalar("int_list", list(stride)), p.add_scalar("int_list", list(pad)), p.add_scalar("int_list", [1, 1]),
            p.add_scalar("int", 7), p.add_scalar("int", -2),
            p.add(TensorValue(mults.shape, "int32", data=mults)), p.add(TensorValue(shifts.shape, "int32", data=shifts)),
            p.add_scalar("int", -128), p.add_scalar("int", 127), p.add(TensorValue((0,), "uint8")), out, out]
    p.instructions.append(Instruction("cortex_m::quantized_conv2d.out", args))
    p.inputs, p.outputs = [x], [out]
    inplace_pass.plan_memory(p, allow_inplace=inplace)  # in place: the planner's row-by-row variant and its ring of rows
    assert not inplace or p.instructions[0].op == CONV_ROWS_INPLACE
    if scratch:  # the gathered windows and widened rows in the scratch (after the ring), planned in the arena
        sized_scratch(p, lambda: inplace_pass.plan_memory(p, allow_inplace=inplace))
        assert not inplace or p.instructions[0].op == CONV_ROWS_INPLACE
    return p


def depthwise_program(rng, h, w, c, stride=1, pad=1, left_shift=False, inplace=False, scratch=False,
                      one_shift=False, k=3, kw=None, stride_w=None, pad_w=None) -> Program:
    """scratch: in place, the variant's scratch tensor of H * W int8 as the planner sizes it (the generated
    DSP layer keeps its window of input rows there), else an empty one (the window on the stack). one_shift:
    every channel's right shift 8 (the planar assembly without its branch by right shift). A k x kw kernel
    (kw: k), strides (stride, stride_w) and padding (pad, pad_w)."""
    kw, sw, pw = kw or k, stride_w or stride, pad if pad_w is None else pad_w
    p = Program()
    x = p.add(TensorValue((1, c, h, w), "int8", dim_order=NHWC, scale=0.1, zero_point=3))
    wt = rng.integers(-127, 128, (1, k, kw, c)).astype(np.int8)
    bias = rng.integers(-5000, 5000, c).astype(np.int32)
    mults, shifts = _requant_params(rng, c, -8 if one_shift else -10, -7 if one_shift else -6, left_shift=left_shift)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pw - kw) // sw + 1
    out = p.add(TensorValue((1, c, oh, ow), "int8", dim_order=NHWC, scale=0.2, zero_point=-2))
    args = [x, p.add(TensorValue(wt.shape, "int8", data=wt)), p.add(TensorValue(bias.shape, "int32", data=bias)),
            p.add_scalar("int_list", [stride, sw]), p.add_scalar("int_list", [pad, pw]),
            p.add_scalar("int_list", [1, 1]), p.add_scalar("int", 1), p.add_scalar("int", int(rng.integers(-128, 128))),
            p.add_scalar("int", -2), p.add(TensorValue(mults.shape, "int32", data=mults)),
            p.add(TensorValue(shifts.shape, "int32", data=shifts)), p.add_scalar("int", -128), p.add_scalar("int", 110),
            p.add(TensorValue((h * w,), "int8") if scratch else TensorValue((0,), "uint8")), out, out]
    op = "mcu::quantized_depthwise_conv2d_inplace.out" if inplace else "cortex_m::quantized_depthwise_conv2d.out"
    p.instructions.append(Instruction(op, args))
    p.inputs, p.outputs = [x], [out]
    planner.plan(p)
    if inplace:  # the output over the input, as the planner's depthwise_channel rule places it
        p.tensor(out).offset = p.tensor(x).offset
    return p


def linear_program(rng, rows, k, n, kernel_sum=True, no_shift=False) -> Program:
    """no_shift: a multiplier of about 2^-11 and no shift (the requant_any path: no right shift for smmlar)."""
    p = Program()
    x = p.add(TensorValue((rows, k), "int8", scale=0.1, zero_point=5))
    wt = rng.integers(-127, 128, (n, k)).astype(np.int8)
    in_off = int(rng.integers(-128, 128))
    bias = rng.integers(-5000, 5000, n).astype(np.int64)
    mults, shifts = _requant_params(rng, 1, -13, -11)
    if no_shift:
        mults, shifts = mults >> 11, np.zeros_like(shifts)
    out = p.add(TensorValue((rows, n), "int8", scale=0.2, zero_point=1))
    if kernel_sum:
        ks = (bias + in_off * wt.astype(np.int64).sum(axis=1)).astype(np.int32)
        b_arg, ks_arg = p.add_scalar("none"), p.add(TensorValue(ks.shape, "int32", data=ks))
    else:
        b_arg, ks_arg = p.add(TensorValue(bias.shape, "int32", data=bias.astype(np.int32))), p.add_scalar("none")
    args = [x, p.add(TensorValue(wt.shape, "int8", data=wt)), b_arg, ks_arg, p.add_scalar("int", in_off),
            p.add_scalar("int", 0), p.add_scalar("int", 1), p.add_scalar("int_list", [int(mults[0])]),
            p.add_scalar("int_list", [int(shifts[0])]), p.add_scalar("int", 127), p.add_scalar("int", -128), out, out]
    p.instructions.append(Instruction("cortex_m::quantized_linear.out", args))
    p.inputs, p.outputs = [x], [out]
    planner.plan(p)
    return p


# (x_zp, x_mult, x_shift, y_zp, y_mult, y_shift, out_zp, out_mult, out_shift, act_min, act_max) of quantized_add
RESNET8_ADD = (48, 1914037969, -1, -128, 1 << 30, 0, -128, 1245815954, -18, -128, 127)  # its first residual add


def add_program(shape, params=RESNET8_ADD, dim_order=None, chain: str | None = None) -> Program:
    """quantized_add of two int8 inputs of one shape (and dim_order). chain "a" / "b": a second add
    takes the first one's output as its operand a / b and writes over it (the planner's binary_same
    rule places it there; for "b" its operand a, a third input, is read again by a third add)."""
    p = Program()
    x = p.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, scale=0.1, zero_point=0))
    y = p.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, scale=0.1, zero_point=0))
    out = p.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, scale=0.2, zero_point=0))
    ints = [p.add_scalar("int", int(v)) for v in params]
    p.instructions.append(Instruction("cortex_m::quantized_add.out", [x, *ints[:3], y, *ints[3:], out, out]))
    p.inputs, p.outputs = [x, y], [out]
    if chain:
        z = p.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, scale=0.1, zero_point=0))
        out2 = p.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, scale=0.2, zero_point=0))
        a, b = (out, z) if chain == "a" else (z, out)
        p.instructions.append(Instruction("cortex_m::quantized_add.out", [a, *ints[:3], b, *ints[3:], out2, out2]))
        p.inputs, p.outputs = [x, y, z], [out2]
        if chain == "b":
            out3 = p.add(TensorValue(tuple(shape), "int8", dim_order=dim_order, scale=0.2, zero_point=0))
            p.instructions.append(Instruction("cortex_m::quantized_add.out", [z, *ints[:3], out2, *ints[3:], out3, out3]))
            p.outputs = [out3]
    inplace_pass.plan_memory(p)
    return p


@pytest.fixture(scope="module")
def failing_kernels(tmp_path_factory):
    d = tmp_path_factory.mktemp("failing_kernels")
    (d / "op_failing.cpp").write_text(FAILING)
    return kernels.find_kernels(d, backend="test")


def run_generated(program: Program, gen: generated.Generated, lib: dict, tmp_path: Path, x: np.ndarray,
                  external=None, owners=(), stdout: list | None = None):
    """Runs `program` natively with `gen`'s kernel file; returns (returncode, output or None). `external`
    (value index -> key) and `owners`: the program written with those external constants, the build with
    kExternalOwners (MCU_EXTERNAL_CONSTANTS), as a firmware embeds it (generated/external.py); `stdout`
    gets the runner's output."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler (g++)")
    sel = [lib[op] for op in program.operators]
    src = tmp_path / generated.GENERATED_FILE
    src.write_text(gen.source + owners_source(list(owners)))
    flags = host.CXXFLAGS + ["-DMCU_KERNEL_PREPARE=1", "-DMCU_VALUE_CACHE=0", "-DMCU_INSTRUCTION_CACHE=8",  # no value cache: bound at load
                             "-I", str(KERNELS_PORTABLE)]
    flags += [f"-DMCU_EXTERNAL_CONSTANTS={len(owners)}"] if owners else []
    exe = host.build_native(cxx, flags, host.RUNTIME_CORE / "tools" / "host_runner.cpp",
                            generated.hooked_kernels(sel, gen), host.CACHE, host.HostRunError,
                            extra_sources=[src, host.RUNTIME_CORE / "src" / "crc32.cpp"])
    out_t = program.tensor(program.outputs[0])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "p.pte").write_bytes(pte.write(program, external))
        xin = x.transpose(0, 2, 3, 1) if x.ndim == 4 else x  # NHWC memory
        (tmp / "in_0.bin").write_bytes(np.ascontiguousarray(xin).tobytes())
        r = subprocess.run([str(exe), str(tmp / "p.pte"), str(max(program.arena_size, 16)), str(tmp),
                            str(tmp / "in_0.bin")], capture_output=True, text=True, timeout=60)
        if stdout is not None:
            stdout.append(r.stdout)
        if r.returncode != 0:
            return r.returncode, None
        y = np.frombuffer((tmp / "out_0.bin").read_bytes(), np.int8)
        shape = out_t.shape
        if len(shape) == 4:
            n, c, h, w = shape
            return 0, y.reshape(n, h, w, c).transpose(0, 3, 1, 2)
        return 0, y.reshape(shape)


CASES = [  # (kind, shape parameters)
    ("pointwise", dict(h=5, w=5, cin=16, cout=8)),  # 25 pixels: odd, a 1-row tail
    ("pointwise", dict(h=2, w=3, cin=4, cout=12)),
    ("pointwise", dict(h=25, w=5, cin=64, cout=64)),  # KWS DS-CNN
    # Input channels not a multiple of 4 (output channels one): the convolution's windows, K padded with zeros
    ("pointwise", dict(h=5, w=4, cin=6, cout=8)),
    ("pointwise", dict(h=3, w=7, cin=3, cout=16)),
    ("pointwise_relu", dict(h=4, w=5, cin=17, cout=20)),
    ("pointwise_right", dict(h=7, w=3, cin=12, cout=20)),  # right shifts only: requant_right
    ("pointwise_inplace", dict(h=3, w=5, cin=32, cout=32)),
    ("pointwise_inplace", dict(h=4, w=3, cin=24, cout=8)),
    # Widening over the input (Cout > Cin): rows from the last; an odd row count (a lone last row first).
    ("pointwise_inplace", dict(h=3, w=3, cin=8, cout=16)),
    ("pointwise_inplace_right", dict(h=3, w=3, cin=8, cout=16)),  # the smmlar GEMM's pairs, from the last
    ("pointwise_inplace_right", dict(h=2, w=5, cin=4, cout=12)),
    ("pointwise_inplace_right", dict(h=5, w=5, cin=32, cout=64)),  # chunks of 4 rows from the last, a lone row
    ("pointwise_inplace_right", dict(h=5, w=5, cin=64, cout=32)),  # chunks of 8 rows in order
    # The GEMM straight over its input (gemm_inplace_direct): from the last pair (N > K), an odd first row; in order
    ("pointwise_inplace_right", dict(h=3, w=5, cin=8, cout=16)),
    ("pointwise_inplace_right", dict(h=4, w=3, cin=16, cout=16)),
    ("depthwise", dict(h=25, w=5, c=64)),  # KWS DS-CNN
    ("depthwise", dict(h=9, w=8, c=8, stride=2)),  # MobileNet's strided layers
    ("depthwise", dict(h=1, w=3, c=4)),  # every pixel a border pixel, above and below
    ("depthwise", dict(h=6, w=5, c=12, pad=0)),
    ("depthwise_left", dict(h=4, w=4, c=16, stride=2)),  # a left shift: requant_any
    ("depthwise_left", dict(h=5, w=7, c=8)),  # requant_any one channel at a time (planar: stride 1, W >= 4)
    ("depthwise_inplace", dict(h=25, w=5, c=64)),  # KWS without CMSIS-NN: the in-place variant
    ("depthwise_inplace", dict(h=7, w=6, c=8, stride=2)),
    # The window of input rows in the variant's scratch (H * W bytes: H / 4 rows of W x 4 channels), which
    # slides down the input (VWW's 48x48 layers: 12 of 49 rows); 3 rows, the least (padding 0).
    ("depthwise_inplace", dict(h=16, w=48, c=4, scratch=True)),  # 4 rows of 48 x 4 in the scratch
    ("depthwise_inplace", dict(h=17, w=48, c=8, stride=2, scratch=True)),
    ("depthwise_inplace", dict(h=12, w=48, c=4, pad=0, scratch=True)),  # 3 rows: a slide every output row
    ("depthwise_inplace", dict(h=33, w=24, c=8, scratch=True)),
    ("depthwise_inplace", dict(h=16, w=6, c=8, scratch=True)),  # more rows on the stack than in the scratch
    ("depthwise_inplace", dict(h=40, w=6, c=8, stride=1)),  # 22 of 41 rows on the stack: slides
    # Planar (one channel at a time on int16 rows, dsp_depthwise_asm.dw_plane / dw_rows_asm): strided with an odd
    # last pixel, strided rows sliding through the scratch with a loop over pixel pairs, channels 260 apart.
    ("depthwise_inplace", dict(h=9, w=9, c=12, stride=2)),
    ("depthwise_inplace", dict(h=20, w=40, c=4, stride=2, scratch=True)),
    ("depthwise", dict(h=5, w=4, c=260)),
    # VWW's planes (issue 27): 6x6 and 3x3 whole in the buffer, 6x6 -> 3x3 strided, an odd width strided to
    # an odd last pixel; their channels' right shifts 6..10: one rows function in assembly per shift.
    ("depthwise_inplace", dict(h=6, w=6, c=24)),
    ("depthwise_inplace", dict(h=6, w=6, c=16, stride=2)),
    ("depthwise_inplace", dict(h=3, w=3, c=20)),
    ("depthwise_inplace", dict(h=12, w=13, c=8, stride=2)),
    ("depthwise_inplace", dict(h=5, w=7, c=8, one_shift=True)),  # one right shift: no branch by shift
    ("depthwise_inplace", dict(h=16, w=48, c=4, scratch=True, one_shift=True)),
    # Stride 1 in 2x2 blocks (dsp_depthwise_asm.dw_blocks): all channels in one function with an odd last row and
    # an odd last pixel, rows sliding through the scratch (DwPlane<kPairs>: even row counts) in a loop of blocks with
    # an odd last pixel and the layer's odd last row.
    ("depthwise_inplace", dict(h=7, w=5, c=96, one_shift=True)),
    ("depthwise_inplace", dict(h=33, w=25, c=8, scratch=True)),
    # Stride 2 straight from the NHWC input (dsp_depthwise_direct_asm.dw_direct_asm): no padding (a row's first pair
    # before its pair loop, odd H and W), and a row of 7 pairs and a last single pixel whose taps leave LDRSB's 4095
    # (r0 moved)
    ("depthwise_inplace", dict(h=11, w=33, c=8, stride=2, pad=0)),
    ("depthwise_inplace", dict(h=5, w=30, c=48, stride=2)),
    ("depthwise", dict(h=7, w=11, c=8, stride=2)),  # not in place; a last pair and a last row at the right and bottom
    # Channels not a multiple of 4: the planar paths (one channel at a time; dsp_depthwise_asm.dw_plane), the NHWC one
    # (words of 4 channels) never: stride 1 rows in assembly, stride 2 straight from the input, in place whole in the
    # buffer, rows sliding through the scratch, a left shift (requant_any, C++), no padding, one channel, rows of 1 and
    # 2 pixels, rows too wide for DW_WINDOW_STACK_BYTES (three on the stack: DW_ODD_STACK_BYTES)
    ("depthwise", dict(h=6, w=5, c=3)),
    ("depthwise_inplace", dict(h=7, w=6, c=9, stride=2)),
    ("depthwise_inplace", dict(h=6, w=6, c=13)),
    ("depthwise", dict(h=9, w=9, c=6, stride=2)),
    ("depthwise", dict(h=6, w=7, c=5, pad=0)),
    ("depthwise_inplace", dict(h=20, w=30, c=3, scratch=True)),
    ("depthwise_inplace", dict(h=15, w=17, c=10, stride=2, scratch=True)),
    ("depthwise_left", dict(h=5, w=6, c=7)),
    ("depthwise", dict(h=6, w=7, c=1)),
    # Kernels other than 3x3 (the NHWC path, dw_pixels with every border class's taps unrolled): MobileNetV3's and
    # MNASNet's 5x5, a Conv1d's 1 x k over one row with a column stride of 2, 7x7 with padding 3, 5x5 stride 2, a
    # left shift (requant_any); in place with the window on the stack, in the scratch and holding the whole input
    ("depthwise", dict(h=7, w=7, c=16, pad=2, k=5)),
    ("depthwise", dict(h=1, w=40, c=8, pad=0, k=1, kw=5, stride_w=2, pad_w=2)),
    ("depthwise", dict(h=9, w=10, c=4, pad=3, k=7)),
    ("depthwise", dict(h=11, w=9, c=8, stride=2, pad=2, k=5)),
    ("depthwise_left", dict(h=6, w=6, c=4, pad=1, k=5, kw=3)),
    ("depthwise_inplace", dict(h=14, w=14, c=8, pad=2, k=5)),
    ("depthwise_inplace", dict(h=14, w=14, c=8, pad=2, k=5, scratch=True)),
    ("depthwise_inplace", dict(h=1, w=64, c=12, pad=0, k=1, kw=5, pad_w=2)),
    ("depthwise_inplace", dict(h=10, w=5, c=8, stride=2, pad=2, k=5)),
    ("depthwise", dict(h=8, w=7, c=8, pad=2)),  # 3x3 with padding 2: the NHWC path, per-class starts
    ("depthwise", dict(h=6, w=20, c=64, pad=2, k=5)),  # taps past 4,095 bytes: dw_tap_off, not the asm block
    # In place over one row wider than the stack budget (a Conv1d over 200 and 300 samples): chunks of output pixels
    # whose input columns go through a window (DwCols), the columns two chunks share kept
    ("depthwise_inplace", dict(h=1, w=200, c=12, pad=0, k=1, kw=5, pad_w=2)),
    ("depthwise_inplace", dict(h=1, w=300, c=4, pad=0, k=1, kw=3, stride_w=2, pad_w=1)),
    ("depthwise_inplace", dict(h=6, w=2, c=17)),
    ("depthwise", dict(h=7, w=1, c=11)),
    ("depthwise", dict(h=4, w=90, c=3)),
    ("depthwise", dict(h=5, w=91, c=2, stride=2)),
    # Channels not a multiple of 4 where no planar path takes the layer (kernels other than 3x3, stride 3, rows too wide
    # for three int16 copies): the NHWC path, the last c % 4 channels a group of their own read from the pixel's last
    # word, rotated (dw_pixels' kTail): 1, 2 and 3 of them; in place a pass of their own (window on the stack, in the
    # scratch, over one wide row in chunks); requant_any, and smmlar under a fused ReLU
    ("depthwise", dict(h=7, w=7, c=6, pad=2, k=5)),
    ("depthwise", dict(h=1, w=40, c=30, pad=0, k=1, kw=7, stride_w=2, pad_w=3)),
    ("depthwise", dict(h=9, w=9, c=7, stride=3)),
    ("depthwise", dict(h=4, w=300, c=5)),
    ("depthwise_left", dict(h=6, w=6, c=9, pad=1, k=5, kw=3)),
    ("depthwise_inplace", dict(h=10, w=10, c=13, pad=2, k=5)),
    ("depthwise_inplace", dict(h=14, w=14, c=10, pad=2, k=5, scratch=True)),
    ("depthwise_inplace", dict(h=1, w=128, c=45, pad=0, k=1, kw=5, pad_w=2)),
    ("depthwise_inplace", dict(h=8, w=7, c=7, stride=3)),
    ("conv", dict(h=49, w=10, cin=1, cout=64, kh=10, kw=4, stride=(2, 2), pad=(4, 1))),  # KWS stem
    ("conv", dict(h=11, w=9, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),  # VWW/ResNet stem: 27 taps
    # Windows widened as they are gathered (dsp_work.pre_widened, K < 36; conv_stream_widened): an odd last window
    # (25 pixels in chunks of 6), stride 1 with a last block of 4, rows of 3 taps (no whole word), of 6 (one word and
    # two last bytes), a strided 1x1 of 16 channels (whole words only), padding on every side
    ("conv", dict(h=9, w=9, cin=3, cout=16, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv", dict(h=7, w=6, cin=3, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv", dict(h=8, w=9, cin=1, cout=8, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv", dict(h=5, w=7, cin=2, cout=8, kh=3, kw=3, stride=(1, 2), pad=(0, 1))),
    ("conv", dict(h=9, w=7, cin=16, cout=32, kh=1, kw=1, stride=(2, 2), pad=(0, 0))),
    ("conv_inplace", dict(h=13, w=7, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    # 3x3 stems of stride 2 across whose output width is a multiple of 3 (dsp_work.stem_s2: conv_stem_s2, the GEMM's
    # three rows of overlapping windows): two calls a row (the stack's 3 pixels), the first's head inside the input;
    # an odd width (the last period and head across the right edge: copied); no padding (the last head from the
    # word before it); stride 1 down (rows above and below from zp); a last block of 4 channels; in place through
    # the ring; a whole row per call in the scratch
    ("conv", dict(h=11, w=12, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv", dict(h=9, w=11, cin=3, cout=16, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv", dict(h=8, w=13, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(0, 0))),
    ("conv", dict(h=6, w=12, cin=3, cout=8, kh=3, kw=3, stride=(1, 2), pad=(1, 1))),
    ("conv", dict(h=7, w=12, cin=3, cout=12, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv_inplace", dict(h=13, w=12, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv_inplace_scratch", dict(h=11, w=18, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv", dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),  # ResNet-8 body
    # K 108: the two-row GEMM without widened rows (two windows + widened rows > WIDE_STACK_BYTES), its
    # sub-blocks unrolled (K < PAIR_LOOP_K), a last block of 4
    ("conv", dict(h=5, w=6, cin=12, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    # small K with Cin % 4 == 0 and an even output width: both conv_cols and the widened gather could take it
    ("conv", dict(h=7, w=8, cin=4, cout=8, kh=2, kw=2, stride=(1, 1), pad=(0, 1))),
    ("conv_left", dict(h=8, w=8, cin=8, cout=4, kh=1, kw=1, stride=(2, 2), pad=(0, 0))),  # strided 1x1 shortcut
    # Row by row over the input (mcu::quantized_conv2d_rows_inplace): saved rows read from the ring.
    ("conv_inplace", dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv_inplace", dict(h=11, w=9, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv_inplace", dict(h=14, w=14, cin=8, cout=8, kh=5, kw=5, stride=(1, 1), pad=(2, 2))),  # MNIST-like
    # The per-call buffers (gathered windows / output rows, the two-row GEMM's widened rows) in the layer's scratch
    # tensor, planned in the arena (issue 25): dsp_work.work_plan; the widening in a loop from K 68.
    ("conv_scratch", dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv_scratch", dict(h=4, w=4, cin=64, cout=8, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),  # K 576: 2,304 B widened
    ("conv_inplace_scratch", dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv_inplace_scratch", dict(h=11, w=9, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),  # a ring of 27 B rows
    ("conv_inplace_scratch", dict(h=14, w=14, cin=8, cout=8, kh=5, kw=5, stride=(1, 1), pad=(2, 2))),
    ("pointwise_right_scratch", dict(h=7, w=3, cin=12, cout=20)),  # the widened rows alone
    ("pointwise_inplace_right_scratch", dict(h=5, w=5, cin=32, cout=64)),
    ("pointwise_inplace_right_scratch", dict(h=5, w=5, cin=64, cout=32)),
    ("linear", dict(rows=1, k=64, n=12)),  # KWS classifier
    ("linear", dict(rows=3, k=40, n=8)),
    ("linear_bias", dict(rows=2, k=128, n=20)),
    # Under a fused ReLU (act_min = the output offset: exactness.sign_free), the requantizations without their sign
    # term: two-row GEMM blocks over widened rows, the looped sub-blocks, the stems' four-row blocks, conv_cols, the
    # depthwise pixel pairs (stride 2, an odd last pixel) and 2x2 blocks (an odd last pixel and row)
    ("pointwise_relu", dict(h=25, w=5, cin=64, cout=64)),
    ("pointwise_inplace_right_relu", dict(h=5, w=5, cin=32, cout=64)),
    ("pointwise_right_relu", dict(h=3, w=3, cin=160, cout=20)),
    ("conv_inplace_relu", dict(h=11, w=9, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv_relu", dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("depthwise_inplace_relu", dict(h=9, w=9, c=12, stride=2)),
    ("depthwise_inplace_relu", dict(h=7, w=5, c=96, one_shift=True)),
    ("depthwise_relu", dict(h=25, w=5, c=64)),
    ("depthwise_inplace_relu", dict(h=7, w=5, c=15)),
    ("depthwise_relu", dict(h=9, w=7, c=9, stride=2)),
    ("depthwise_inplace_relu", dict(h=9, w=9, c=11, pad=2, k=5)),
    ("depthwise_relu", dict(h=1, w=64, c=6, pad=0, k=1, kw=9, pad_w=4)),
    # Output channels / sizes not multiples of 4 (match._narrow): the GEMM's rows of N rounded up to 4 into a buffer,
    # the first N of each copied out (gemm_stream_rows): classifier heads of 10 and 2 classes, odd 1x1 layers
    ("linear", dict(rows=1, k=64, n=10)),
    ("linear_bias", dict(rows=3, k=32, n=2)),
    ("linear", dict(rows=5, k=96, n=7)),
    ("pointwise", dict(h=5, w=3, cin=16, cout=6)),
    ("pointwise_right", dict(h=9, w=8, cin=32, cout=21)),
    ("pointwise_right_relu", dict(h=6, w=5, cin=24, cout=3)),
    ("pointwise_right_scratch", dict(h=6, w=5, cin=12, cout=10)),
    # ... in place (gemm_stream_rows' order: N < K forwards, N > K from the last row), and k x k convolutions: the
    # chunk's rows of N rounded up after its windows, N of each copied out (conv_stream, conv_stream_widened with an
    # odd last window, conv_patches), in place row by row too; input channels not a multiple of 4 as well (a 1x1 layer
    # through the convolution's windows)
    ("pointwise_inplace_right", dict(h=5, w=5, cin=32, cout=22)),
    ("pointwise_inplace_right", dict(h=5, w=3, cin=8, cout=13)),
    ("conv_relu", dict(h=6, w=5, cin=16, cout=10, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv_inplace_relu", dict(h=9, w=8, cin=8, cout=6, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv", dict(h=12, w=12, cin=1, cout=6, kh=5, kw=5, stride=(1, 1), pad=(0, 0))),  # LeNet's first layer
    ("conv_inplace_relu", dict(h=9, w=9, cin=3, cout=6, kh=3, kw=3, stride=(2, 2), pad=(1, 1))),
    ("conv_left", dict(h=5, w=5, cin=8, cout=7, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("conv_scratch", dict(h=6, w=6, cin=12, cout=7, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
    ("pointwise", dict(h=5, w=4, cin=6, cout=10)),
    # Fully connected layers whose K is not a multiple of 4: rows copied into a zero-padded buffer (gemm_stream_padded,
    # gemm's kKIn), with any N
    ("linear", dict(rows=1, k=29, n=7)),
    ("linear_bias", dict(rows=3, k=37, n=8)),
    ("linear", dict(rows=5, k=13, n=16)),
    ("linear_noshift", dict(rows=3, k=22, n=6)),
    # ... and in-place 1x1 layers whose input channels are not: forwards (N <= K), from the last row (N > K), the rows
    # in the scratch tensor, the requant_any path (gemm's kKIn)
    ("pointwise_inplace_right", dict(h=5, w=5, cin=19, cout=29)),
    ("pointwise_inplace_right_relu", dict(h=4, w=5, cin=35, cout=26)),
    ("pointwise_inplace_right", dict(h=3, w=7, cin=3, cout=48)),
    ("pointwise_inplace_right_scratch", dict(h=5, w=4, cin=22, cout=24)),
    ("pointwise_inplace", dict(h=3, w=5, cin=10, cout=13)),
]


def with_relu(p: Program) -> Program:
    """The instruction's activation minimum set to its output offset (-2 in these programs): a fused ReLU."""
    ins = p.instructions[0]
    ins_min = 11 if "depthwise" in ins.op else 10
    assert p.values[ins.args[ins_min]].value == -128
    p.values[ins.args[ins_min]].value = -2
    return p


def case_program(kind: str, shape: dict):
    """(program, input) of one CASES entry, from a seed of the case's own (hash() of a string differs
    per process: some seeds saturated a small layer's outputs and the distinctness check failed at random)."""
    rng = np.random.default_rng(zlib.crc32(f"{kind}-{sorted(shape.items())}".encode()))
    scratch = kind.endswith("_scratch")
    relu = kind.endswith("_relu")
    kind = kind.removesuffix("_scratch").removesuffix("_relu")
    p, x = _case_program(rng, kind, shape, scratch)
    return (with_relu(p) if relu else p), x


def _case_program(rng, kind: str, shape: dict, scratch: bool):
    if kind.startswith("pointwise"):
        p = pointwise_program(rng, inplace="inplace" in kind, left_shift=not kind.endswith("right"), scratch=scratch,
                              **shape)
        x = rng.integers(-128, 128, (1, shape["cin"], shape["h"], shape["w"])).astype(np.int8)
    elif kind.startswith("conv"):
        p = conv_program(rng, left_shift=kind == "conv_left", inplace=kind == "conv_inplace", scratch=scratch, **shape)
        x = rng.integers(-128, 128, (1, shape["cin"], shape["h"], shape["w"])).astype(np.int8)
    elif kind.startswith("depthwise"):
        p = depthwise_program(rng, left_shift=kind == "depthwise_left", inplace=kind == "depthwise_inplace", **shape)
        x = rng.integers(-128, 128, (1, shape["c"], shape["h"], shape["w"])).astype(np.int8)
    else:
        p = linear_program(rng, kernel_sum=kind in ("linear", "linear_noshift"), no_shift=kind == "linear_noshift",
                           **shape)
        x = rng.integers(-128, 128, (shape["rows"], shape["k"])).astype(np.int8)
    return p, x


@pytest.mark.parametrize("kind,shape", CASES, ids=[f"{k}-{'x'.join(map(str, s.values()))}" for k, s in CASES])
def test_generated_layer_is_bit_exact(kind, shape, failing_kernels, tmp_path):
    p, x = case_program(kind, shape)
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == 1, gen.skipped
    assert gen.layers[0].sign != kind.endswith("_relu")
    kind = kind.removesuffix("_relu")
    if kind.endswith("_scratch"):  # the buffers in the scratch tensor (work_plan's first choice), not on the stack
        work = gen.layers[0].work
        assert work.offset is not None and work.wide in ("arg", "pre", "stem") and "int8_t work[" not in gen.source, vars(work)
        kind = kind.removesuffix("_scratch")
    assert gen.layers[0].right_shift_only == (kind in ("pointwise_right", "pointwise_inplace_right", "depthwise", "depthwise_inplace", "conv",
                                                       "conv_inplace", "linear", "linear_bias"))
    if kind.startswith("conv") and shape["cin"] == 3 and shape["stride"][1] == 2 and shape["kw"] == 3:  # the stems
        ow = (shape["w"] + 2 * shape["pad"][1] - 3) // 2 + 1
        assert ("conv_stem_s2<" in gen.source) == (ow % 3 == 0), ow
    expected = run_int8_reference(p, [x])[0]
    rc, got = run_generated(p, gen, failing_kernels, tmp_path, x)
    assert rc == 0, "the generated layer did not run (the failing library kernel did)"
    np.testing.assert_array_equal(got, expected)
    assert len(np.unique(expected)) > min(10, expected.size // 2)  # a test that can tell outputs apart


def test_planar_depthwise_has_a_rows_loop_per_right_shift(failing_kernels):
    """dsp_depthwise_asm: the right shift is SSAT's immediate, so a layer whose channels have several right
    shifts gets one rows loop per shift, picked by the channel's block word 9: in one function for all
    the channels where the buffer holds every row the layer reads (dw_all_asm: VWW's 6x6 planes), else one
    rows function per shift, picked by the C++ (dw_rows_asm: the 40-wide rows sliding through the scratch)."""
    from mcu_gen.backends.generated.dsp_depthwise_asm import dw_all_ok, dw_plane, dw_rights

    for shape, whole in ((dict(h=6, w=6, c=24), True), (dict(h=20, w=40, c=4, scratch=True), False)):
        p, _ = case_program("depthwise_inplace", shape)
        gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
        l = gen.layers[0]
        rights = dw_rights(l)
        assert dw_plane(l) is not None and len(rights) >= 2 and dw_all_ok(l, dw_plane(l)) == whole, (shape, rights)
        assert (f"{l.name}_all:" in gen.source) == whole
        for r in rights:
            assert f"#8, r10, asr #{r}" in gen.source, r
            if whole:
                assert f".Lsetup_{l.name}_all_r{r}:" in gen.source, r
            else:
                assert f"{l.name}_rows_r{r}:" in gen.source, r
        for r in rights[1 if whole else 0:-1 if not whole else None]:
            assert (f"cmp r2, #{r}" if whole else f"if (k[9] == {r}u) return {l.name}_rows_r{r}(p, y, n, k);") in gen.source


def test_planar_depthwise_in_2x2_blocks(failing_kernels):
    """Stride 1 planar layers whose 2x2 blocks pay for their code (dw_blocks): the row-pair loop in the function for
    all the channels (with its odd last row and pixel) and in the rows function (a loop of blocks, the odd last
    row by a loop over pixel pairs, the rows function's calls of an even count: DwPlane<..., true>); a layer of
    few channels and four right shifts keeps the pixel pairs."""
    from mcu_gen.backends.generated.dsp_depthwise_asm import dw_blocks, dw_plane

    for shape, whole, blocks in ((dict(h=7, w=5, c=96, one_shift=True), True, True),
                                 (dict(h=33, w=25, c=8, scratch=True), False, True),
                                 (dict(h=6, w=6, c=24), True, False)):
        p, _ = case_program("depthwise_inplace", shape)
        gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
        l = gen.layers[0]
        assert dw_blocks(l, dw_plane(l)) == blocks, shape
        assert (".Lrq_" in gen.source) == blocks and (f"{l.name}_all:" in gen.source) == whole, shape
        if blocks and not whole:
            assert ".Lbk_" in gen.source and ".Lodd_" in gen.source and ", true>(in, out" in gen.source
        if blocks and whole:
            assert ".Lrow_" in gen.source  # the odd last row


def test_other_weights_reach_the_library_kernel(failing_kernels, tmp_path):
    rng = np.random.default_rng(7)
    p = pointwise_program(rng, 3, 3, 8, 8)
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    w = p.values[p.instructions[0].args[1]]
    w.data = w.data.copy()
    w.data.flat[5] ^= 1  # one weight differs from what the layer was generated for
    rc, _ = run_generated(p, gen, failing_kernels, tmp_path, np.zeros((1, 8, 3, 3), np.int8))
    assert rc != 0


@pytest.mark.parametrize("kind,shape", [("pointwise_inplace", dict(h=3, w=5, cin=32, cout=32)),
                                        ("conv", dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))),
                                        ("depthwise_inplace", dict(h=6, w=6, c=24)),
                                        ("linear", dict(rows=3, k=32, n=16))])
def test_external_weights_run_only_on_their_generated_layer(kind, shape, failing_kernels, tmp_path):
    """The program a firmware embeds (generated/external.py): the weights only a generated layer reads are
    external constants (a key, no data). The layer matches them by key and runs bit-exact (the library kernel
    here always fails); the same program with the key of other bytes, or on a build whose layers do not hold
    them (no kExternalOwners: MCU_EXTERNAL_CONSTANTS 0), is rejected at load (UnsupportedProgram), and no
    library kernel ever runs on a tensor without data."""
    p, x = case_program(kind, shape)
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == 1, gen.skipped
    external, owners = external_constants(p, gen.layers)
    w = p.instructions[0].args[1]
    assert w in external and owners == [gen.layers[0].name], (external, owners)
    assert all(p.values[v].nbytes >= EXTERNAL_MIN_BYTES for v in external)
    full, embedded = pte.write(p), pte.write(p, external)
    # the weights' bytes are gone from the program's constant segment
    assert pte_split(full)["segment"] - pte_split(embedded)["segment"] >= p.values[w].nbytes
    with pytest.raises(pte.PteError, match="external"):
        pte.read(embedded)  # the host's reader refuses it: not a program to run elsewhere (model.pte is)
    expected = run_int8_reference(p, [x])[0]
    rc, got = run_generated(p, gen, failing_kernels, tmp_path, x, external=external, owners=owners)
    assert rc == 0, "the generated layer did not run on its external weights"
    np.testing.assert_array_equal(got, expected)
    out = []
    wrong = {v: f"mcu-gen:{int(key.split(':')[1], 16) ^ 1:08x}:{p.values[v].nbytes}" for v, key in external.items()}
    assert all(external[v] == external_key(p.values[v]) != wrong[v] for v in external)
    rc, _ = run_generated(p, gen, failing_kernels, tmp_path, x, external=wrong, owners=owners, stdout=out)
    assert rc != 0 and "load-error" in out[-1] and "UnsupportedProgram" in out[-1], out
    empty = {v: "" for v in external}  # an external constant without a key: not one (ExecuTorch requires a name)
    rc, _ = run_generated(p, gen, failing_kernels, tmp_path, x, external=empty, owners=owners, stdout=out)
    assert rc != 0 and "load-error" in out[-1] and "UnsupportedProgram" in out[-1], out
    (tmp_path / "none").mkdir()
    rc, _ = run_generated(p, gen, failing_kernels, tmp_path / "none", x, external=external, stdout=out)
    assert rc != 0 and "load-error" in out[-1] and "UnsupportedProgram" in out[-1], out


def test_a_program_planned_otherwise_reaches_the_library_kernel(failing_kernels, tmp_path):
    """Generated layers are bound by planned offset: a crafted program with the same weights and arguments
    but its output placed over its input (a widening 1x1 convolution that is not in place would overwrite
    input pixels it still reads) or merely elsewhere must not run the generated layer. With the failing
    library kernel, rc != 0 shows the library kernel ran; the program as planned runs the generated layer."""
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (1, 8, 4, 5)).astype(np.int8)
    results = []
    for move in ("none", "over_input", "elsewhere"):
        p = pointwise_program(np.random.default_rng(3), 4, 5, 8, 16)
        gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
        assert len(gen.layers) == 1, gen.skipped
        xt, out = p.tensor(p.inputs[0]), p.tensor(p.outputs[0])
        if move == "over_input":
            out.offset = xt.offset
        elif move == "elsewhere":
            out.offset = p.arena_size + 16
        p.arena_size = max(p.arena_size, out.offset + out.nbytes)
        case = tmp_path / move
        case.mkdir()
        results.append(run_generated(p, gen, failing_kernels, case, x)[0])
    assert results[0] == 0, "the generated layer did not run on the program it was generated for"
    assert results[1] != 0 and results[2] != 0, results


def test_a_scratch_tensor_other_than_planned_reaches_the_library_kernel(failing_kernels, tmp_path):
    """A layer generated with its per-call buffers in the scratch tensor (issue 25) checks that tensor at load: a
    program whose scratch is smaller, or planned elsewhere, than the layer was generated for runs the library
    kernel (failing here), never the layer over bytes the plan gave to another tensor."""
    shape = dict(h=6, w=5, cin=16, cout=12, kh=3, kw=3, stride=(1, 1), pad=(1, 1))
    for inplace in (False, True):
        p, x = case_program("conv_inplace_scratch" if inplace else "conv_scratch", shape)
        gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
        assert gen.layers[0].work.offset is not None
        rc, got = run_generated(p, gen, failing_kernels, tmp_path, x)
        assert rc == 0 and np.array_equal(got, run_int8_reference(p, [x])[0])
        t = p.values[p.instructions[0].args[12]]
        size, offset = t.shape, t.offset
        t.shape = (t.nbytes - 4,)  # smaller, same place
        rc, _ = run_generated(p, gen, failing_kernels, tmp_path, x)
        assert rc != 0, "a smaller scratch ran the generated layer"
        t.shape, t.offset = size, (p.arena_size + 15) // 16 * 16  # same size, elsewhere (past every other tensor)
        p.arena_size = t.offset + t.nbytes
        rc, _ = run_generated(p, gen, failing_kernels, tmp_path, x)
        assert rc != 0, "a scratch planned elsewhere ran the generated layer"
        t.offset = offset


def test_not_covered_layers_are_named():
    rng = np.random.default_rng(1)
    p = pointwise_program(rng, 2, 2, 250, 10, inplace=True)  # 250 inputs in place: rows of 252 + 12 B, too many
    layers, skipped = generated.eligible(p)
    assert layers == [] and ("channels 250->10 in place: input channels not a multiple of 4, and a padded row (252 B) "
                             "and output row (12 B) take more than 248 B") in skipped[0][2], skipped
    layers, skipped = generated.eligible(linear_program(rng, 1, 239, 7))  # padded rows of 240 + 8 B: as much as fits
    assert len(layers) == 1 and skipped == []
    layers, skipped = generated.eligible(linear_program(rng, 1, 239, 10))  # 240 + 12 B: too much stack
    assert layers == [] and ("sizes 239->10: K not a multiple of 4, and its padded row (240 B) and output row (12 B) "
                             "take more than 248 B of stack") in skipped[0][2], skipped
    layers, skipped = generated.eligible(linear_program(rng, 1, 29, 7))
    assert [(l.k_in, l.k, l.n_out, l.n) for l in layers] == [(29, 32, 7, 8)] and skipped == []
    for cout in (8, 10):  # 6 inputs: the convolution's windows (10 outputs: rows of 12, 10 of each copied out)
        layers, skipped = generated.eligible(pointwise_program(rng, 2, 2, 6, cout))
        assert [(l.kind, l.n, l.n_out) for l in layers] == [("conv", 8, 0) if cout == 8 else ("conv", 12, 10)]
        assert skipped == []


def test_depthwise_layers_the_generators_refuse_are_named():
    """On the DSP cores a kernel other than 3x3 over fewer than 4 channels (the NHWC path reads a pixel's last four
    channels as one word; the M55 takes it); in place, output rows longer than input rows (padding over half the
    kernel) would be read after they are written; a stride under 1 (a program from elsewhere) is refused, not divided
    by."""
    from mcu_gen.backends.generated import match

    rng = np.random.default_rng(4)
    p = depthwise_program(rng, 6, 6, 3, pad=2, k=5)
    assert "3 channels (fewer than 4, which the NHWC path reads as one word)" in generated.eligible(p)[1][0][2]
    assert len(match.eligible(p, isa="mve")[0]) == 1
    p = depthwise_program(rng, 6, 6, 8, pad=2, inplace=True)  # 3x3, padding 2: 8 output columns over 6
    for isa in ("dsp", "mve"):
        assert "in place with output rows longer than input rows (8 > 6" in match.eligible(p, isa=isa)[1][0][2]
    p = depthwise_program(rng, 6, 6, 8)
    p.values[p.instructions[0].args[3]].value = [0, 0]
    assert match.eligible(p)[1][0][2] == "a stride under 1"


def test_odd_channel_depthwise_without_a_planar_path_takes_the_nhwc_path():
    """A 3x3 depthwise layer whose channel count is not a multiple of 4 runs planar (one channel at a time) on the
    DSP cores; where no planar path takes it (stride 3, rows whose three int16 copies pass DW_ODD_STACK_BYTES, kernels
    other than 3x3) the NHWC path does, its last c % 4 channels a group of their own (tail); under 4 channels it
    stays on the library kernel, the reason naming its channel count and what the planar path takes."""
    rng = np.random.default_rng(2)
    layers, _ = generated.eligible(depthwise_program(rng, 5, 6, 7))
    assert len(layers) == 1 and layers[0].tail == 0  # planar
    for p, tail in ((depthwise_program(rng, 7, 7, 7, stride=3), 3), (depthwise_program(rng, 4, 800, 5), 1),
                    (depthwise_program(rng, 1, 50, 30, pad=0, k=1, kw=7, pad_w=3), 2)):
        layers, skipped = generated.eligible(p)
        assert len(layers) == 1 and layers[0].tail == tail and layers[0].offset_in_taps, skipped
    layers, skipped = generated.eligible(depthwise_program(rng, 7, 7, 3, stride=3))
    assert layers == [] and "3 channels (fewer than 4" in skipped[0][2] and "strides 1 or 2" in skipped[0][2], skipped


def test_a_convolution_whose_window_passes_the_stack_budget_stays_on_the_library_kernel(failing_kernels):
    """A convolution's window of K bytes on the stack where the arena had no room for it: past CONV_STACK_BYTES (416)
    the layer stays on the library kernel (whose path the generated one's would pass), named; with its scratch grown
    (what the scratch pass does where the arena has room) it is generated, its window in the arena."""
    rng = np.random.default_rng(4)
    p = conv_program(rng, 5, 5, 64, 8, 3, 3, (1, 1), (1, 1))  # K 576
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert gen.layers == [] and "its windows take 576 bytes of stack (> 416)" in gen.skipped[0][2], gen.skipped
    p = conv_program(rng, 5, 5, 64, 8, 3, 3, (1, 1), (1, 1), scratch=True)
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == 1 and gen.layers[0].work.offset is not None
    p = conv_program(rng, 5, 5, 44, 8, 3, 3, (1, 1), (1, 1))  # K 396: on the stack
    assert len(generated.generate(p, [failing_kernels[op] for op in p.operators]).layers) == 1


def test_in_place_depthwise_rows_past_the_stack_budget_stay_on_the_library_kernel():
    """An in-place depthwise layer keeps three input rows (NHWC W * 4 bytes, or planar int16) in its scratch tensor or
    on the stack; more than INPLACE_GROUP_BYTES (576) of stack would take the image past its library build's stack
    (the library in-place kernel's path is 728 B): rows of 300 pixels (3,600 B, for 8 channels and, on the NHWC path,
    for 5: planar 1,812 B) stay on the library kernel, named; rows of 40 pixels (480 B) are generated."""
    rng = np.random.default_rng(3)
    for c in (8, 5):
        for scratch in (False, True):  # no scratch, or the planner's H * W bytes (1,200: too few for three rows)
            layers, skipped = generated.eligible(depthwise_program(rng, 4, 300, c, inplace=True, scratch=scratch))
            why = "in place with a window of 3600 bytes (> 576 of stack and the scratch)"
            assert layers == [] and why in skipped[0][2], skipped
    assert len(generated.eligible(depthwise_program(rng, 4, 40, 8, inplace=True))[0]) == 1


def test_packed_weight_order():
    """Block of 8 channels (then 4), group of 4 inputs, channel, then (k, k+2, k+1, k+3)."""
    w = np.arange(12 * 8, dtype=np.int16).reshape(12, 8)  # w[n][k] = 8n + k
    l = GemmLayer("l", 0, "op", "linear", 1, 8, 12, w, np.zeros(12, np.int32), np.zeros(12, np.int32),
                            np.zeros(12, np.int32), 0, -128, 127, False)
    packed = l.packed_weights()
    assert list(packed[:8]) == [0, 2, 1, 3, 8, 10, 9, 11]  # channels 0 and 1, inputs 0..3
    assert list(packed[32:36]) == [4, 6, 5, 7]  # channel 0, inputs 4..7
    assert list(packed[64:68]) == [64, 66, 65, 67]  # the last block of 4: channel 8
    assert list(packed[80:84]) == [68, 70, 69, 71]  # channel 8, inputs 4..7
    assert l.weight_bytes == 192 and packed.size == 96


def _smmlar_emulated(acc, consts, act_min, act_max, sign=True):
    """dsp_prelude.h's requant_smmlar on the doubled accumulator, in Python integers (SMMLAR exactly);
    ``sign`` False: the assembly's form under a fused ReLU (exactness.sign_free), no sign term."""
    m, ra, right = (int(v) for v in consts)
    acc2 = 2 * int(acc)
    t = ra + (-1 if acc2 < 0 and sign else 0)
    r = (t * 2**32 + acc2 * m + 2**31) >> 32  # SMMLAR: the top word of the 64-bit sum
    assert -2**31 <= r < 2**31
    return min(max(r >> right, -128, act_min), 127, act_max)


def test_smmlar_requantization_equals_the_reference():
    """The one-rounding form (SMMLAR + ASR, offset folded into ra) gives CMSIS-NN's two roundings bit for
    bit, ties included (acc * mult exactly halfway at either rounding), for both signs."""
    from mcu_gen.reference.integer import requantize

    rng = np.random.default_rng(17)
    checked = 0
    for _ in range(300):
        m = int(rng.integers(2**30, 2**31))
        shift = int(rng.integers(-20, 0))
        off = int(rng.integers(-128, 128))
        bound = int(rng.integers(1, 2**30))
        consts = smmlar_consts([m], [shift], [bound], off)
        if consts is None:
            continue
        right = -shift
        accs = list(rng.integers(-bound, bound + 1, 40))
        # accumulators at the rounding ties: h exactly k * 2^right + 2^(right - 1) (second rounding) and
        # acc * m = j * 2^31 + 2^30 (first rounding), when such an acc exists in range
        for k in rng.integers(-200, 200, 10):
            h = int(k) * 2**right + 2**(right - 1)
            acc = (h * 2**31) // m
            accs += [acc - 1, acc, acc + 1]
        for acc in accs:
            if abs(acc) > bound:
                continue
            want = int(np.clip(requantize(np.int64(acc), m, shift) + off, -128, 127))
            assert _smmlar_emulated(acc, consts[0], -128, 127) == want, (acc, m, shift, off)
            checked += 1
    assert checked > 5000


def test_smmlar_without_the_sign_term_under_a_fused_relu():
    """Where act_min >= the output offset (exactness.sign_free), the form without the sign term equals the
    reference bit for bit (ties of both roundings and negative accumulators included), and it is needed: with
    act_min below the offset some negative tie differs."""
    from mcu_gen.reference.integer import requantize

    rng = np.random.default_rng(23)
    checked, differs = 0, 0
    for case in range(400):
        m = int(rng.integers(0, 2**31)) if case % 10 else int(rng.integers(0, 4))  # small mults too
        shift = int(rng.integers(-20, 0))
        off = int(rng.integers(-128, 128))
        relu = case % 4 != 3
        act_min = int(rng.integers(off, 128)) if relu else int(rng.integers(-128, off + 1))
        act_min = off if relu and case % 2 else act_min  # the usual ReLU: act_min = offset
        bound = int(rng.integers(1, 2**30))
        consts = smmlar_consts([m], [shift], [bound], off)
        if consts is None:
            continue
        assert sign_free(off, act_min) == (act_min >= off)
        right = -shift
        accs = list(rng.integers(-bound, bound + 1, 40)) + [-1, 0, 1, -bound, bound]
        for k in rng.integers(-200, 200, 10):
            h = int(k) * 2**right + 2**(right - 1)
            acc = (h * 2**31) // m if m else 0
            accs += [acc - 1, acc, acc + 1]
        for acc in accs:
            if abs(acc) > bound:
                continue
            want = int(np.clip(requantize(np.int64(acc), m, shift) + off, max(-128, act_min), 127))
            got = _smmlar_emulated(acc, consts[0], act_min, 127, sign=False)
            if sign_free(off, act_min):
                assert got == want, (acc, m, shift, off, act_min)
                checked += 1
            else:
                differs += got != want
    assert checked > 5000 and differs > 0


def test_smmlar_needs_what_it_proves():
    assert smmlar_consts([2**30], [1], [100], 0) is None  # a left shift
    assert smmlar_consts([2**30], [-3], [2**30], 0) is None  # the doubled accumulator would overflow
    assert smmlar_consts([-5], [-3], [100], 0) is None  # a negative multiplier
    assert smmlar_consts([2**31 - 1], [-31], [1000], 100) is None  # offset * 2^31 does not fit
    assert smmlar_consts([2**30], [-8], [1000], -5) is not None


CROSS_CASES = [  # (kind, shape, left_shift): the requant_any GEMM (old path) and the smmlar paths
    ("pointwise", dict(h=3, w=3, cin=4, cout=16), True),  # se_hardswish's K 4, N 16: "impossible constraints"
    ("pointwise", dict(h=3, w=3, cin=4, cout=16), False),
    ("pointwise", dict(h=2, w=2, cin=8, cout=12), False),  # a last block of 4
    ("pointwise_inplace", dict(h=3, w=5, cin=32, cout=32), False),
    ("pointwise_inplace", dict(h=3, w=3, cin=8, cout=16), False),  # widening, rows from the last
    ("pointwise_inplace", dict(h=3, w=3, cin=8, cout=16), True),
    ("conv", dict(h=11, w=9, cin=3, cout=8, kh=3, kw=3, stride=(2, 2), pad=(1, 1)), False),
    ("depthwise", dict(h=6, w=6, c=16, stride=1), False),
    ("depthwise_inplace", dict(h=7, w=6, c=8, stride=2), False),
    ("depthwise_inplace", dict(h=16, w=6, c=8, scratch=True), False),  # the window in the scratch
]


@pytest.mark.parametrize("cpu", ["cortex-m33", "cortex-m4"])
def test_generated_source_compiles_for_the_dsp_cores(cpu, failing_kernels, tmp_path):
    """The DSP build (inline and stand-alone assembly) of generated layers compiles with the firmware's flags,
    among them the shape whose 8x1 block once ran out of registers (tests/models_int8/se_hardswish)."""
    cxx = shutil.which("arm-none-eabi-g++")
    if cxx is None:
        pytest.skip("no arm-none-eabi-g++ (gcc-arm-none-eabi)")
    from mcu_gen.paths import RUNTIME_CORE

    fpu = {"cortex-m33": "fpv5-sp-d16", "cortex-m4": "fpv4-sp-d16"}[cpu]
    rng = np.random.default_rng(3)
    for n, (kind, shape, left) in enumerate(CROSS_CASES):
        if kind.startswith("pointwise"):
            p = pointwise_program(rng, inplace=kind.endswith("inplace"), left_shift=left, **shape)
        elif kind == "conv":
            p = conv_program(rng, **shape)
        else:
            p = depthwise_program(rng, inplace=kind.endswith("inplace"), **shape)
        gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
        assert len(gen.layers) == 1
        assert (gen.layers[0].requant_kind == "smmlar") == (not left)
        src = tmp_path / f"gen_{n}.cpp"
        src.write_text(gen.source)
        r = subprocess.run([cxx, f"-mcpu={cpu}", "-mthumb", f"-mfpu={fpu}", "-mfloat-abi=hard", "-O2", "-std=c++17",
                            "-fno-exceptions", "-fno-rtti", "-ffunction-sections", "-Wall", "-Werror=return-type",
                            "-DMCU_KERNEL_PREPARE=1",  # as every image with generated layers (their prepare hooks)
                            "-I", str(RUNTIME_CORE / "include"), "-I", str(KERNELS_PORTABLE), "-c", str(src),
                            "-o", str(tmp_path / f"gen_{n}.o")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{kind} {shape}: {r.stderr[-3000:]}"


def test_in_place_variants_have_generated_forms():
    """A widening 1x1 convolution planned in place (output over the input, rows from the last) and an
    in-place depthwise layer too large for a stack copy of its channel group (VWW's 48x48 layers: the window
    of rows in the scratch) are generated: the builder keeps the planner's in-place variants (VWW's arena
    39,168 B as the library build's) instead of leaving them out (builder.variant_refusal)."""
    rng = np.random.default_rng(2)
    p = pointwise_program(rng, 3, 3, 8, 16, inplace=True)
    layers, skipped = generated.eligible(p)
    assert len(layers) == 1 and not skipped and layers[0].inplace_ok
    assert generated.covers(p, 0, "mcu::quantized_conv2d_pointwise_inplace.out")
    p = depthwise_program(rng, 48, 48, 8, inplace=True, scratch=True)
    assert generated.covers(p, 0, "mcu::quantized_depthwise_conv2d_inplace.out")
    p = depthwise_program(rng, 4, 400, 8, inplace=True)  # no scratch, a window of 4,800 B: not on the stack
    assert not generated.covers(p, 0, "mcu::quantized_depthwise_conv2d_inplace.out")


def test_a_library_build_says_what_generated_kernels_would_take(tmp_path):
    """--kernels library (the RAM-lean build) on a core with generated kernels: report.json counts the
    layers `auto` would generate (the stem too, planned in place row by row) and report.md says how
    to get them."""
    import mcu_gen

    r = mcu_gen.build("examples/kws_dscnn/model.py", board="mps2-an505", out=tmp_path / "m33", quantize="int8",
                      backend="portable", compile=False, kernels="library")
    assert r.report["generated_kernels"]["available_layers"] == 10 and not r.report["generated_kernels"]["layers"]
    assert "10 layer(s) could run on int8 kernels generated for this core: `--kernels auto`" in (
        tmp_path / "m33" / "report.md").read_text()
    r = mcu_gen.build("examples/kws_dscnn/model.py", board="mps2-an505", out=tmp_path / "gen", quantize="int8",
                      backend="portable", compile=False)  # the default: auto
    assert "available_layers" not in r.report["generated_kernels"] and len(r.report["generated_kernels"]["layers"]) == 10


ADD_CASES = [  # (params, shape, chain): the DSP add's tables and one-rounding requantization
    (RESNET8_ADD, (1, 16, 8, 8), None),
    ((0, 2048, -1, 0, 2048, -2, 0, 1 << 30, -1, -128, 127), (256, 256), None),  # ties at every stage, all pairs
    ((5, 2048, 1, -3, 6144, -3, 2, 3 << 29, -2, -100, 90), (1, 3, 5, 7), None),  # a left shift, a narrower range
    ((7, -2048, -1, -9, 1518500250, -1, 4, -1073741823, -18, -100, 100), (6, 7), None),  # negative multipliers
    (RESNET8_ADD, (2, 3, 7), "a"),  # in place over operand a
    (RESNET8_ADD, (2, 3, 7), "b"),  # in place over operand b
]


@pytest.mark.parametrize("params,shape,chain", ADD_CASES, ids=[f"add{i}" for i in range(len(ADD_CASES))])
def test_generated_add_is_bit_exact(params, shape, chain, failing_kernels, tmp_path):
    """The DSP generator's add (tables of both operands, requant_smmlar of the doubled sum) through the
    runtime with a failing library kernel, against the integer reference; every int8 pair in one case."""
    p = add_program(shape, params, chain=chain)
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == len(p.instructions), gen.skipped
    rng = np.random.default_rng(len(shape) + sum(shape))
    if shape == (256, 256):
        x, y = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
        ins = [x.astype(np.int8), y.astype(np.int8)]
    else:
        ins = [rng.integers(-128, 128, shape).astype(np.int8) for _ in p.inputs]
    expected = run_int8_reference(p, ins)[0]
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler (g++)")
    src = tmp_path / generated.GENERATED_FILE
    src.write_text(gen.source)
    flags = host.CXXFLAGS + ["-DMCU_KERNEL_PREPARE=1", "-DMCU_VALUE_CACHE=0", "-DMCU_INSTRUCTION_CACHE=1", "-DMCU_BOUND_CALLS=4",  # bound at load
                             "-I", str(KERNELS_PORTABLE)]
    sel = [failing_kernels[op] for op in p.operators]
    exe = host.build_native(cxx, flags, host.RUNTIME_CORE / "tools" / "host_runner.cpp",
                            generated.hooked_kernels(sel, gen), host.CACHE, host.HostRunError,
                            extra_sources=[src, host.RUNTIME_CORE / "src" / "crc32.cpp"])
    (tmp_path / "p.pte").write_bytes(pte.write(p))
    paths = []
    for k, v in enumerate(ins):
        (tmp_path / f"in_{k}.bin").write_bytes(np.ascontiguousarray(v).tobytes())
        paths.append(str(tmp_path / f"in_{k}.bin"))
    r = subprocess.run([str(exe), str(tmp_path / "p.pte"), str(max(p.arena_size, 16)), str(tmp_path), *paths],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "the generated add did not run (the failing library kernel did): " + r.stderr[-2000:]
    got = np.frombuffer((tmp_path / "out_0.bin").read_bytes(), np.int8).reshape(shape)
    np.testing.assert_array_equal(got, expected)
    assert len(np.unique(expected)) > 10


def test_a_bound_table_in_flash_runs_the_layers_it_lists_and_rejects_a_wrong_one(failing_kernels, tmp_path):
    """MCU_BOUND_TABLE (an image without uploads): the generated layers after the instruction cache are a
    flash table, no RAM; load() checks each listed instruction's prepare chooses the listed layer, so a table
    that does not fit the program (another layer listed) rejects the program instead of running it wrong."""
    from mcu_gen.firmware import project

    p = add_program((2, 3, 7), chain="a")
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == len(p.instructions) >= 2, gen.skipped
    ins = [np.random.default_rng(k).integers(-128, 128, (2, 3, 7)).astype(np.int8) for k in range(len(p.inputs))]
    expected = run_int8_reference(p, ins)[0]
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler (g++)")
    src = tmp_path / generated.GENERATED_FILE
    src.write_text(gen.source)
    (tmp_path / "p.pte").write_bytes(pte.write(p))
    paths = []
    for k, v in enumerate(ins):
        (tmp_path / f"in_{k}.bin").write_bytes(np.ascontiguousarray(v).tobytes())
        paths.append(str(tmp_path / f"in_{k}.bin"))
    sel = [failing_kernels[op] for op in p.operators]
    bound = sorted((l.instruction, l.name) for l in gen.layers if l.instruction >= 1)
    wrong = [(i, gen.layers[0].name) for i, _ in bound]  # the first layer's function listed for the later ones
    results = []
    for k, table in enumerate((bound, wrong)):
        (tmp_path / f"bound_{k}.cpp").write_text('#include "mcu/kernel.h"\n' + project.bound_table_source(table))
        flags = host.CXXFLAGS + ["-DMCU_KERNEL_PREPARE=1", "-DMCU_VALUE_CACHE=0", "-DMCU_INSTRUCTION_CACHE=1",
                                 f"-DMCU_BOUND_TABLE={len(table)}", "-I", str(KERNELS_PORTABLE)]
        exe = host.build_native(cxx, flags, host.RUNTIME_CORE / "tools" / "host_runner.cpp",
                                generated.hooked_kernels(sel, gen), host.CACHE, host.HostRunError,
                                extra_sources=[src, host.RUNTIME_CORE / "src" / "crc32.cpp", tmp_path / f"bound_{k}.cpp"])
        results.append(subprocess.run([str(exe), str(tmp_path / "p.pte"), str(max(p.arena_size, 16)), str(tmp_path),
                                       *paths], capture_output=True, text=True, timeout=60))
    assert results[0].returncode == 0, "the listed layers did not run: " + results[0].stdout + results[0].stderr[-2000:]
    got = np.frombuffer((tmp_path / "out_0.bin").read_bytes(), np.int8).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected)
    assert results[1].returncode == 2 and results[1].stdout.split()[2:] == ["UnsupportedProgram", str(bound[0][0])], \
        results[1].stdout + results[1].stderr[-2000:]


def test_dsp_add_refuses_what_it_cannot_prove():
    def plan(params):
        return add_dsp_plan(AddLayer("l", 0, ADD_OPS[0], 8, *params))

    assert "right shift of 1..31" in plan(RESNET8_ADD[:8] + (0, -128, 127))  # no right shift: no rounding form
    assert "rounding constant" in plan(RESNET8_ADD[:6] + (200,) + RESNET8_ADD[7:8] + (-25, -128, 127))  # 200 << 25
    assert "32 bits" in plan((0, 2**31 - 1, 10) + RESNET8_ADD[3:])  # 2a reaches 2^31


def test_the_scratch_pass_grows_scratch_only_where_the_arena_has_room(failing_kernels, tmp_path):
    """plan/generated_scratch.py: a 3x3 convolution at the arena's peak (input and output live together) keeps its
    buffers on the stack; the 1x1 convolution after it, where its small output leaves most of the arena free,
    gets its widened rows in a grown scratch tensor; the arena is the one without them; bit-exact."""
    from mcu_gen.plan.generated_scratch import scratch_pass

    rng = np.random.default_rng(11)

    def conv_args(p, x, cin, cout, k, pad, out):
        wt = rng.integers(-127, 128, (cout, k, k, cin)).astype(np.int8)
        bias = rng.integers(-5000, 5000, cout).astype(np.int32)
        mults, shifts = _requant_params(rng, cout, -12, -8, left_shift=False)
        return [x, p.add(TensorValue(wt.shape, "int8", data=wt)), p.add(TensorValue(bias.shape, "int32", data=bias)),
                p.add_scalar("int_list", [1, 1]), p.add_scalar("int_list", [pad, pad]), p.add_scalar("int_list", [1, 1]),
                p.add_scalar("int", 7), p.add_scalar("int", -2), p.add(TensorValue(mults.shape, "int32", data=mults)),
                p.add(TensorValue(shifts.shape, "int32", data=shifts)), p.add_scalar("int", -128),
                p.add_scalar("int", 127), p.add(TensorValue((0,), "uint8")), out, out]

    def program():
        p = Program()
        x = p.add(TensorValue((1, 16, 8, 8), "int8", dim_order=NHWC, scale=0.1, zero_point=-7))
        y = p.add(TensorValue((1, 16, 8, 8), "int8", dim_order=NHWC, scale=0.2, zero_point=-2))
        z = p.add(TensorValue((1, 8, 8, 8), "int8", dim_order=NHWC, scale=0.2, zero_point=-2))
        p.instructions += [Instruction("cortex_m::quantized_conv2d.out", conv_args(p, x, 16, 16, 3, 1, y)),
                           Instruction("cortex_m::quantized_conv2d.out", conv_args(p, y, 16, 8, 1, 0, z))]
        p.inputs, p.outputs = [x], [z]
        return p

    plain, p = program(), program()
    planner.plan_methods(plain, None, None, True, choose=inplace_pass.pass_for(None, False))
    planner.plan_methods(p, None, None, True, choose=scratch_pass(inplace_pass.pass_for(None, False)))
    assert p.arena_size == plain.arena_size
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    conv, pointwise = gen.layers
    assert conv.work.offset is None and pointwise.work.offset is not None and pointwise.work.wide == "arg"
    assert p.values[p.instructions[1].args[12]].nbytes == 4 * 16  # the widened pair of rows of K 16
    x = rng.integers(-128, 128, (1, 16, 8, 8)).astype(np.int8)
    rc, got = run_generated(p, gen, failing_kernels, tmp_path, x)
    assert rc == 0 and np.array_equal(got, run_int8_reference(p, [x])[0])


def test_strided_depthwise_runs_straight_from_the_input(failing_kernels):
    """dsp_depthwise_direct_asm.dw_direct_asm: a stride-2 layer with smmlar requantization is one function for all
    its channels reading the NHWC input (no int16 rows, no rows function): its block 7 words a channel plus a start
    per border class, per right shift one copy of the rows; long rows of like pairs in a loop (the first pair before
    it), the top row's in a loop of one; a pair after the first takes its column 0's first two values in r3, r9; r0
    moved where a pair's taps would leave LDRSB's 4095. On the VWW geometry (24x24x32 -> 12x12) an interior pixel
    pair is at most 45 estimated M33 cycles (the planar path: 35 for its MACs and 16 for widening its inputs)."""
    from mcu_gen.backends.generated.dsp_depthwise_asm import dw_requant_asm, dw_rights, static_cycles
    from mcu_gen.backends.generated.dsp_depthwise_direct_asm import (dw_direct_block, dw_direct_ok, dw_direct_row,
                                                                     dw_direct_unit)

    for shape, loop, moved in ((dict(h=20, w=40, c=4, stride=2, scratch=True), True, False),
                               (dict(h=11, w=33, c=8, stride=2, pad=0), True, False),
                               (dict(h=5, w=30, c=48, stride=2), False, True),
                               (dict(h=9, w=9, c=12, stride=2), False, False)):
        p, _ = case_program("depthwise_inplace", shape)
        gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
        l = gen.layers[0]
        assert dw_direct_ok(l), shape
        src = gen.source
        assert f"{l.name}_direct:" in src and f"{l.name}_rows_r" not in src and f"{l.name}_all:" not in src, shape
        _, _, ru, cu = l.classes()
        assert dw_direct_block(l).shape == (l.c, 7 + len(ru) * len(cu)), shape
        for r in dw_rights(l):
            assert f".L{'r'}_{l.name}_direct_{r}:" in src and f"ssat r10, #8, r10, asr #{r}" in src, (shape, r)
        assert (f".Lu_{l.name}_direct_" in src) == (loop or l.ow // 2 > 2), shape  # pair loops (the top row's too)
        assert "smlabb r10, r3, r4, r10" in src or "smlabt r10, r3, r4, r10" in src, shape  # a carried column 0
        seq, _ = dw_direct_row(l, l.classes()[0][-1], 16)
        # r0 moved up to a pair whose taps would pass 4095 from it (not only up to a loop)
        assert any(a[0] == "adjust" and b[0] == "unit" for a, b in zip(seq, seq[1:])) == moved, seq

    # a VWW-like interior pair: its loads, MACs and requantization, the next pair's first loads among its stores
    p, _ = case_program("depthwise_inplace", dict(h=24, w=24, c=32, stride=2))
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    l = gen.layers[0]
    seq, _ = dw_direct_row(l, 1, 16)
    units = [i for i in seq if i[0] == "unit"]
    _, ky, cols, starts, base = units[2]
    lead, body = dw_direct_unit(l, ky, cols, base, starts, True, True)
    pair = body + dw_requant_asm(l.c, True, -128, 127, 8, lead)  # VWW's layers: the full int8 range
    assert sum(i.startswith("ldrsb") for i in pair) == 13 and sum(i.startswith("smlab") for i in pair) == 18
    assert static_cycles(pair) <= 45, static_cycles(pair)


def test_depthwise_kernels_other_than_3x3_unroll_only_their_interior_class(failing_kernels):
    """A 5x5 kernel with padding 2 has 5 x 5 border classes (taps inside the input): its interior class (all 25 taps)
    on dw_pixels, unrolled; the other 24 on dw_pixels_border, one function per width of their taps inside (3, 4, 5
    columns), the kernel rows looped at run time (a 7x7 layer's 48 border classes took 57 KB of code unrolled).
    Every tap adds (x + input_offset) * w: one accumulator start (the bias) for every class."""
    import re

    p = depthwise_program(np.random.default_rng(3), 7, 7, 16, pad=2, k=5)
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == 1 and gen.layers[0].offset_in_taps
    calls = re.findall(r"  (dw_pixels(?:_border)?)<([^>]*)>\(", gen.source)
    unrolled = [a for f, a in calls if f == "dw_pixels"]
    widths = {int(a.split(",")[-1]) for f, a in calls if f == "dw_pixels_border"}
    assert len(unrolled) == 1 and unrolled[0].startswith("0, 5, 0, 5,"), unrolled
    assert widths == {3, 4, 5}, calls
    assert gen.layers[0].init_table().shape == (1, 16)


def test_in_place_depthwise_over_one_wide_row_runs_in_chunks(failing_kernels):
    """A Conv1d's depthwise layer in place over 200 samples: a window of the whole row (800 B) passes the stack budget
    (INPLACE_GROUP_BYTES), so the output pixels go in chunks of 128 whose input columns (528 B) go through DwCols; a
    row of 64 samples (256 B) keeps its window of rows (DwWindow)."""
    p, _ = case_program("depthwise_inplace", dict(h=1, w=200, c=12, pad=0, k=1, kw=5, pad_w=2))
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == 1 and "DwCols<200, 12, 1, 2, 128, 5>" in gen.source and "DwWindow<" not in gen.source
    assert "int8_t ring[528]" in gen.source
    p, _ = case_program("depthwise_inplace", dict(h=1, w=64, c=12, pad=0, k=1, kw=5, pad_w=2))
    gen = generated.generate(p, [failing_kernels[op] for op in p.operators])
    assert len(gen.layers) == 1 and "DwWindow<" in gen.source and "DwCols<" not in gen.source


def test_grouped_convolutions_of_up_to_four_groups_are_generated_dense():
    """A grouped convolution of at most match.MAX_DENSE_GROUPS groups is generated as the dense one with a
    block-diagonal weight (zeros between the groups; the same accumulators): tests/models_int8/grouped_convs.py's
    4-group 3x3 and 2-group 1x1 layers; its 8-group layer stays on the library kernel, named. The layers' weights are
    the dense ones; the model runs bit-exact on QEMU in test_int8_models."""
    from mcu_gen.backends.generated.match import MAX_DENSE_GROUPS, dense_weight
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.quantize import export_quantized

    program, _ = export_quantized(load_model_file(Path(__file__).parent / "models_int8" / "grouped_convs.py"), io="int8")
    layers, skipped = generated.eligible(program)
    convs = {l.instruction: l for l in layers if l.kind in ("conv", "pointwise")}
    grouped = [(i, ins) for i, ins in enumerate(program.instructions) if ins.op == "cortex_m::quantized_conv2d.out"
               and program.tensor(ins.args[1]).shape[3] != program.tensor(ins.args[0]).shape[1]]
    groups = {i: program.tensor(ins.args[0]).shape[1] // program.tensor(ins.args[1]).shape[3] for i, ins in grouped}
    assert sorted(groups.values()) == [2, 4, 8] and MAX_DENSE_GROUPS == 4
    for i, ins in grouped:
        w = program.tensor(ins.args[1])
        if groups[i] > MAX_DENSE_GROUPS:
            assert i not in convs and (i, ins.op, "grouped convolution of more than 4 groups") in skipped
            continue
        cin = program.tensor(ins.args[0]).shape[1]
        dense = dense_weight(w, cin)
        cout, g = dense.shape[0], groups[i]
        for o in range(cout):  # each output channel reads its own group's channels only
            grp = o // (cout // g)
            outside = np.delete(dense[o], np.s_[grp * cin // g:(grp + 1) * cin // g], axis=-1)
            assert not outside.any()
        assert np.array_equal(convs[i].weights[:, :dense[0].size], dense.reshape(cout, -1))
