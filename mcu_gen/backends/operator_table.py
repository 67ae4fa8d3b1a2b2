"""The operator table: every kernel mcu-gen has, from the registries, as `mcu-gen kernels` prints it and
docs/operators.md shows it (`mcu-gen kernels --markdown > docs/operators.md`; tests/test_operator_table.py
checks the file is up to date).

Per kernel: the operator (out-variant), the dtypes it computes, what an int8 program (`--quantize int8`)
does with the operator (an int8 kernel of mcu-gen's int8 lowering, a 256-entry int8 table, a view, or an
fp32 island: dequantize, the fp32 kernel, quantize), whether CMSIS-NN runs it (kernels_cmsis_nn/) and
whether mcu-gen generates per-layer code for it (mcu_gen/backends/generated/).
"""
from __future__ import annotations

from dataclasses import dataclass

# What no static-memory MCU program can run, or what is out of mcu-gen's scope, and why (docs/operators.md).
OUT_OF_SCOPE = [
    ("aten::nonzero, aten::masked_select, aten::unique* (and x[mask] gathers)",
     "the output shape depends on the data; the build refuses them with a fixed-size alternative "
     "(torch.where(mask, x, 0), mask.sum(), a one-hot compare for unique)"),
    ("aten::repeat_interleave.Tensor without output_size",
     "the output length is the sum of the repeats: refused at build time; with output_size the kernel runs "
     "and checks the sum"),
    ("random operators (aten::rand, aten::randn, aten::native_dropout in training)",
     "no random numbers on the device; dropout in eval mode is dropped at capture"),
    ("backward operators (aten::convolution_backward, aten::max_pool2d_with_indices_backward, ...)",
     "mcu-gen runs inference"),
    ("complex dtypes (aten::view_as_real_copy, aten::_conj_physical, aten::_fft_c2c, a complex model output)",
     "no complex tensors on the device. A real FFT (aten::_fft_r2c: torch.stft, torch.fft.rfft/fft of real "
     "input) whose complex result reaches only views, sums, real scalings, abs, angle or view_as_real is "
     "rewritten at capture to mcu::rfft (a radix-2 FFT; the direct sum for other lengths) on (..., 2) pair "
     "tensors, in fp32 programs and as one fp32 island of int8 programs (mcu_gen/capture/complex_to_real.py)"),
    ("ExecuTorch's memory ops (aten::empty, dim_order_ops::_empty_dim_order, et_copy::_h2d_copy/_d2h_copy, "
     "aten::lift_fresh_copy)",
     "the memory plan places every tensor ahead of time; captured graphs carry none of these"),
]


@dataclass(frozen=True)
class Row:
    op: str
    dtypes: tuple
    int8: str
    cmsis_nn: bool
    generated: bool
    file: str


def _base(name: str) -> str:
    """'aten::add' of 'aten::add.out' or of torch.ops.aten.add.Tensor."""
    if not isinstance(name, str):
        s = name._schema
        return s.name
    return name.rsplit(".", 1)[0] if name.count(".") else name


def _int8_bases() -> tuple:
    """(bases with an int8 handler, bases lowered as an int8 table, bases that are views or no-ops)."""
    from mcu_gen.quantize import int8_ops  # noqa: F401  (registers the handlers)
    from mcu_gen.quantize.int8_common import LUT_OPS, NOOP_OPS, VIEW_OPS
    from mcu_gen.quantize.int8_ops.registry import HANDLERS

    handled = {_base(t) for h in HANDLERS for t in h.targets}
    return handled, {_base(t) for t in LUT_OPS}, {_base(t) for t in VIEW_OPS | NOOP_OPS}


def int8_handling(op: str, handled: set, lut: set, views: set) -> str:
    base = _base(op)
    if base in ("cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor"):
        return "int8 boundary"
    if op.startswith(("cortex_m::", "mcu::quantized")):
        return "int8 kernel"
    if base == "mcu::conv2d_max_pool2d":  # fp32 conv + clamp + pool: int8 quantizes the two operators apart
        return "int8 kernel" if {"aten::conv2d", "aten::max_pool2d"} <= handled else "fp32 island"
    if op.startswith("mcu::"):  # mcu-gen's fused fp32 form of an ATen operator (conv2d + activation, ...)
        base = "aten::" + base.split("::", 1)[1]
    if base in handled:
        return "int8 kernel"
    if base in lut:
        return "int8 table"
    if base in views:
        return "view"
    return "fp32 island"


def rows() -> list:
    from mcu_gen.backends import cmsis_nn
    from mcu_gen.backends.generated.layers import GENERATED_OPS
    from mcu_gen.backends.kernels import find_kernels

    handled, lut, views = _int8_bases()
    cmsis = set(cmsis_nn.find_kernels())
    return [Row(op, tuple(k.dtypes), int8_handling(op, handled, lut, views), op in cmsis, op in GENERATED_OPS,
                k.file.name)
            for op, k in sorted(find_kernels().items())]


def text() -> str:
    """One line per kernel (`mcu-gen kernels`)."""
    lines = [f"{'operator':52s} {'dtypes':40s} {'in int8 programs':17s} {'CMSIS-NN':9s} {'generated':10s} file"]
    for r in rows():
        lines.append(f"{r.op:52s} {','.join(r.dtypes):40s} {r.int8:17s} {'yes' if r.cmsis_nn else '-':9s} "
                     f"{'DSP/MVE' if r.generated else '-':10s} {r.file}")
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """docs/operators.md."""
    rs = rows()
    out = ["# Operators", "",
           "Generated from the kernel registries by `mcu-gen kernels --markdown > docs/operators.md` "
           "(mcu_gen/backends/operator_table.py); tests/test_operator_table.py fails when this file is out of date.",
           "",
           f"{len(rs)} portable kernels, one operator (out-variant) per file in kernels_portable/ "
           "(docs/writing_kernels.md). A build links only the kernels its program uses, compiled for only the "
           "dtypes its instructions use. Columns:",
           "",
           "- **dtypes**: what the kernel computes (bool, integer and float tensors: masks, token ids, indices).",
           "- **in int8 programs** (`--quantize int8`): `int8 kernel` (mcu-gen's int8 lowering, bit-exact with the "
           "host integer reference), `int8 table` (an elementwise function as a 256-entry table), `view` (no "
           "computation), `int8 boundary` (quantize/dequantize), `fp32 island` (the int8 inputs dequantized, the "
           "fp32 kernel, the result quantized; listed in report.json's `fp32_fallback`).",
           "- **CMSIS-NN**: an adapter in kernels_cmsis_nn/ runs it on CMSIS-NN when CMSIS-NN is found "
           "(docs/cmsis_nn.md).",
           "- **generated**: mcu-gen generates per-layer code for it on DSP (Cortex-M33/M4) and MVE (Cortex-M55) "
           "cores (docs/generated_kernels.md).",
           "",
           "| operator | dtypes | in int8 programs | CMSIS-NN | generated | file |",
           "|---|---|---|---|---|---|"]
    for r in rs:
        out.append(f"| `{r.op}` | {', '.join(r.dtypes)} | {r.int8} | {'yes' if r.cmsis_nn else ''} | "
                   f"{'DSP/MVE' if r.generated else ''} | {r.file} |")
    out += ["", "## Not run, and why", "", "| operators | why |", "|---|---|"]
    out += [f"| {ops} | {why} |" for ops, why in OUT_OF_SCOPE]
    return "\n".join(out) + "\n"
