"""Comparing a device's outputs with what the host expects: the primitives `run`, `verify`, the
sequence and method checks and `eval` share (bit-exact int8, fp32 within tolerance, quantization error),
and LinkCheck, what a comparison found."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mcu_gen.firmware.builder import BuildResult
from mcu_gen.program.ir import Program, tensor_args
from mcu_gen.capture.model_file import output_leaves
from mcu_gen.reference.inputs import dequantize_outputs, to_numpy


def expected_outputs(result: BuildResult, inputs: tuple) -> tuple[list, str]:
    """The outputs the device must reproduce, and where they come from."""
    import torch

    spec = result.spec
    if spec is not None:
        with torch.no_grad():
            module = spec.module if getattr(spec, "module", None) is not None else spec.exported_program.module()
            out = module(*[torch.from_numpy(np.asarray(x, order="C")) for x in inputs])
        return [to_numpy(o) for o in output_leaves(out)], "pytorch"
    from mcu_gen.reference import run_reference

    label = INT8_REFERENCE if is_int8_program(result.program) else "reference interpreter (torch ops)"
    return [np.asarray(o) for o in run_reference(result.program, list(inputs))], label


INT8_REFERENCE = "integer reference (cortex_m ops, bit-exact)"


def is_int8_program(program: Program) -> bool:
    """A program with cortex_m:: (int8) operators, e.g. an int8 .pte exported by ExecuTorch."""
    from mcu_gen.reference.integer import is_int8_op

    return any(is_int8_op(ins.op) for ins in program.instructions)


def identical_outputs(got: list, want: list) -> bool:
    """Same count, dtypes and values (what the integer reference demands)."""
    return len(got) == len(want) and all(
        np.asarray(g).dtype == np.asarray(w).dtype and np.array_equal(np.asarray(g).reshape(np.shape(w)), w)
        for g, w in zip(got, want))


FLOATS = ("float32", "float64", "float16")


# fp32-island operators whose float32 result PyTorch (the reference, where fp32_emulation does not repeat the kernel)
# and the kernel compute alike whatever their internal order: data movement, and elementwise operations of one
# correctly rounded IEEE operation per element. The reference equals the kernel there, bit for bit.
EXACT_FLOAT_OPS = frozenset({
    "aten::clone.out", "aten::cat.out", "aten::slice_copy.Tensor_out", "aten::select_copy.int_out",
    "aten::permute_copy.out", "aten::view_copy.out", "aten::expand_copy.out", "aten::squeeze_copy.dims_out",
    "aten::squeeze_copy.dim_out", "aten::squeeze_copy.out", "aten::unsqueeze_copy.out", "aten::transpose_copy.int_out",
    "aten::t_copy.out", "aten::alias_copy.out", "aten::flip.out", "aten::roll.out", "aten::repeat.out",
    "aten::index.Tensor_out", "aten::index_select.out", "aten::gather.out", "aten::constant_pad_nd.out",
    "aten::split_copy.Tensor_out", "aten::split_with_sizes_copy.out", "aten::unbind_copy.int_out",
    "aten::pixel_shuffle.out", "aten::pixel_unshuffle.out", "aten::where.self_out", "aten::masked_fill.Scalar_out",
    "aten::full.out", "aten::full_like.out", "aten::zeros_like.out", "aten::ones_like.out", "aten::fill.Scalar_out",
    "aten::add.out", "aten::sub.out", "aten::mul.out", "aten::div.out", "aten::neg.out", "aten::abs.out",
    "aten::relu.out", "aten::clamp.out", "aten::clamp.Tensor_out", "aten::maximum.out", "aten::minimum.out",
    "aten::sqrt.out", "aten::floor.out", "aten::ceil.out", "aten::round.out", "aten::trunc.out", "aten::sign.out",
    "aten::hardtanh.out", "aten::amax.out", "aten::amin.out", "aten::max.dim_max", "aten::min.dim_min",
    "aten::max_pool2d_with_indices.out", "aten::_to_copy.out", "cortex_m::dequantize_per_tensor.out",
})


def libm_island_outputs(program) -> set:
    """Positions of the program's float outputs that an fp32 island computes (nothing quantizing in between: the
    island's own output, or computed from it in float) with arithmetic the host reference does not repeat bit for
    bit: a call of the C library's expf/logf/... (fp32_emulation.LIBM_OPS: the host's glibc and the device's newlib
    may differ in the last bit), or an operator whose float32 order the reference leaves to PyTorch (neither
    fp32_emulation.EMULATED nor EXACT_FLOAT_OPS: a linear, an antialiased resize). Those outputs are held to the
    fp32 tolerance, the others exactly."""
    from mcu_gen.plan.planner import alias_root, links
    from mcu_gen.reference.fp32_emulation import EMULATED, LIBM_OPS
    from mcu_gen.reference.integer import is_int8_op

    views = links(program)
    tainted = set()  # alias roots of float tensors computed from a libm call without a quantize in between
    for ins in program.instructions:  # in order: each value is written before it is read
        if not ins.args:
            continue
        # an .out operator's last argument is what it returns: its out tensor, or the list of them (mcu::gru.out
        # returns output, h and its work tensor, mcu::lstm.out also c: each may be a graph output)
        outs = set(tensor_args(program, ins.args[-1:]))
        inexact = ins.op in LIBM_OPS or not (ins.op in EMULATED or ins.op in EXACT_FLOAT_OPS or is_int8_op(ins.op))
        if inexact or any(alias_root(views, a) in tainted for a in tensor_args(program, ins.args) if a not in outs):
            tainted.update(alias_root(views, v) for v in outs if program.values[v].dtype in FLOATS)
    return {k for k, v in enumerate(program.outputs) if alias_root(views, v) in tainted}


def int8_program_outputs_match(program, got: list, want: list) -> bool:
    """An int8 program's outputs against the integer reference: identical, except the outputs of
    libm_island_outputs, which must match in dtype and within verify_outputs' fp32 tolerance."""
    if len(got) != len(want):
        return False
    loose = libm_island_outputs(program)
    exact = [k for k in range(len(want)) if k not in loose]
    if not identical_outputs([got[k] for k in exact], [want[k] for k in exact]):
        return False
    return all(np.asarray(got[k]).dtype == np.asarray(want[k]).dtype and verify_outputs([got[k]], [want[k]])[2]
               for k in loose)


def equal_values(got: list, want: list) -> bool:
    """Same count and values, compared in the device's dtype."""
    return len(got) == len(want) and all(
        np.array_equal(np.asarray(g).reshape(np.shape(w)), np.asarray(w, dtype=np.asarray(g).dtype))
        for g, w in zip(got, want))


def max_abs_difference(got: list, want: list) -> float:
    return max((float(np.max(np.abs(np.asarray(g, np.float64).reshape(np.shape(w)) - np.asarray(w, np.float64))))
                for g, w in zip(got, want) if np.size(w)), default=0.0)


def verify_outputs(got: list, want: list) -> tuple[float, float, bool]:
    """(max abs error, tolerance, ok). Float outputs: |err| <= 1e-4 * max(1, max |finite reference|), with
    NaN and infinities where the reference has them (log(0), 0/0: PyTorch gives them, so must the device);
    integer and bool outputs (indices, masks, counts) must be equal, in the reference's dtype."""
    err, scale, ok = 0.0, 1.0, len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        g = np.asarray(g).reshape(np.shape(w))
        if w.dtype.kind != "f":
            ok = ok and g.dtype == w.dtype and np.array_equal(g, w)
            if w.size and g.dtype.kind in "biuf":
                err = max(err, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
            continue
        g, w = g.astype(np.float64), w.astype(np.float64)
        same_special = np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(
            np.where(np.isinf(w), w, 0.0), np.where(np.isinf(g), g, 0.0))
        ok = ok and same_special
        finite = np.isfinite(w) & np.isfinite(g)
        if finite.any():
            err = max(err, float(np.max(np.abs(g[finite] - w[finite]))))
            scale = max(scale, float(np.max(np.abs(w[finite]))))
    tol = 1e-4 * scale
    return err, tol, ok and err <= tol


def check_device_quant_params(hello, program: Program) -> None:
    """The scale / zero point the device reports for its I/O (HELLO's TENSOR_INFO, flags bit 0) must be the
    build's: a firmware built from another quantization would be fed wrongly quantized inputs. Tensors the
    device reports nothing for (fp32 I/O, an uploaded program) are not checked."""
    for kind, infos, indices in (("input", hello.inputs, program.inputs), ("output", hello.outputs, program.outputs)):
        for k, (info, i) in enumerate(zip(infos, indices)):
            if info.scale is None:
                continue
            t = program.tensor(i)
            if t.dtype != "int8" or t.scale is None or np.ndim(t.scale) != 0:
                raise RuntimeError(f"the device reports quantization parameters (scale {info.scale}, zero point "
                                   f"{info.zero_point}) for {kind} {k}, which the build did not quantize per tensor")
            scale = float(np.float32(t.scale))  # the device holds it as a float32
            if info.scale != scale or info.zero_point != int(t.zero_point):
                raise RuntimeError(f"{kind} {k}: the device reports scale {info.scale!r} / zero point "
                                   f"{info.zero_point}, the build quantized it with scale {scale!r} / zero point "
                                   f"{int(t.zero_point)}: the firmware does not match this build")


def is_classifier(program: Program) -> bool:
    """One (N, K) output, K >= 2, that is not the input's shape (an autoencoder is not a classifier)."""
    if len(program.outputs) != 1:
        return False
    shape = program.tensor(program.outputs[0]).shape
    return len(shape) == 2 and shape[1] >= 2 and all(program.tensor(i).shape != shape for i in program.inputs)


def quant_error(program: Program, device: list, fp32: list) -> tuple[float, int]:
    """(max abs error of the dequantized device outputs vs fp32, top-1 matches)."""
    got = dequantize_outputs(program, device)
    err = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64).reshape(np.shape(g)))))
              for g, w in zip(got, fp32))
    top1 = 0
    if is_classifier(program):
        top1 = int(np.all(np.argmax(got[0], axis=-1) == np.argmax(np.asarray(fp32[0]).reshape(got[0].shape), axis=-1)))
    return err, top1


@dataclass
class LinkCheck:
    """What comparing a device's outputs with the host's expectations found (see check_link)."""
    verified: bool
    max_abs_error: float
    tolerance: float
    reference: str
    counts: list  # instructions (emulators) or cycles (hardware) per inference
    outputs: list
    firmware_version: str = ""
    bit_exact: bool | None = None  # int8 builds and int8 programs: identical to the integer reference
    quant_max_abs_error: float | None = None
    top1_agreement: float | None = None
    quant_output_errors: list | None = None
    identical: bool = True  # every output equal, bit for bit, to what the device had to match
    reference_max_abs_error: float = 0.0  # against what the device had to match (fp32: = max_abs_error)
    reset_identical: bool | None = None  # programs with state: RESET + the same sequence gave the same outputs
    steps: int = 0  # programs with state: steps run (every sequence once)
    methods: list = field(default_factory=list)  # programs with several methods: one row per method


def check_program_id(hello, result) -> None:
    """The board must run the build's program; if it runs none because its runtime rejected the
    built-in one, say so with the runtime's error (a bug of mcu-gen: the build checked it)."""
    from mcu_gen.device.protocol import error_name

    if hello.program_id == result.program_id:
        return
    if hello.program_id == 0 and hello.builtin_status not in (0, None):
        raise RuntimeError(f"the runtime on the board rejected the firmware's built-in program "
                           f"({error_name(hello.builtin_status)}), the build in {result.out}; "
                           "`mcu-gen inspect` shows the program")
    raise RuntimeError(f"the board runs program {hello.program_id:016x}, the build in {result.out} made "
                       f"{result.program_id:016x}: flash or rebuild the firmware first")
