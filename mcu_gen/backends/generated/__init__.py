"""mcu-gen's own int8 kernels, generated per layer at build time (issue 17).

At build time every shape, offset and requantization constant of a layer is known. For the
layers where it pays, this package writes one C++ function per instruction into the firmware
project (``src/generated_kernels.cpp``): a register-blocked GEMM with the layer's sizes as
compile-time constants, reading weights that were reordered and pre-widened to int16 pairs
ahead of time, in exactly the order its inner loop reads them, so that the loop is loads,
``SXTB16`` on the activations and ``SMLAD`` (two 16-bit MACs per instruction) only.

Covered now: 1x1 convolutions (stride 1, no padding, groups 1; ``cortex_m::quantized_conv2d``
and its in-place variant ``mcu::quantized_conv2d_pointwise_inplace``) and fully connected
layers (``cortex_m::quantized_linear``) with input and output channel counts divisible by 4,
on cores with the DSP extension and without MVE (Cortex-M33, M4); elementwise adds
(``cortex_m::quantized_add`` of equal shapes, AddLayer): tables of both operands and the GEMM's
one-rounding requantization (add_dsp_plan).

How the runtime reaches them: through the kernel table's prepare hook (``PrepareFn``,
docs/architecture.md). The operator keeps its library kernel (portable or CMSIS-NN); its
table entry gets a generated prepare function that, once per instruction at load, compares
the instruction with each generated layer — tensor shapes and dim orders, every integer
argument, and a CRC-32 of each constant tensor it was generated from (weights, bias,
multipliers, shifts) — and returns that layer's function only on a full match. Anything
else (another program uploaded later, a changed weight) runs the library kernel. So the
runtime is unchanged, and a build without generated kernels is byte-for-byte what it was.

Arithmetic (identical to the host integer reference, mcu_gen/reference/integer.py):
``acc = init[n] + sum_k x[k] * w'[n][k]`` in wrapping int32, with ``w' = w + filter_offset``
(int16) and ``init`` folding bias, kernel sum and ``input_offset * sum_k w'`` (int32
arithmetic is modular, so the folded sum equals the reference's), then the portable
kernels' ``requantize_to_int8`` (int8_common.h: CMSIS-NN's arm_nn_requantize).

The package, by job: ``match`` (which instructions, and the load-time checks that find them again),
``layers`` (what a generated layer is, its weights in loop order), ``exactness`` (which requantization
is exact and cannot overflow; the add's loop emulated against the reference), ``emit_dsp`` (the values
of the DSP layers' templates and ``generate``), ``hooks`` (prepare functions, shared with generated_mve.py),
backends/render.py (the Jinja2 environment and the values both generators share); for the MVE kernels
(generated_mve.py) ``emit_mve`` (their templates' values) and ``mve_add`` (the add's vector sequence,
proven exact). The C++ itself is in real sources: the static parts in kernels_generated/*.h, the
per-layer parts in the templates templates/generated/*.cpp.j2 (Python chooses the values).
"""
from __future__ import annotations

from mcu_gen.backends.generated.emit_dsp import generate
from mcu_gen.backends.generated.hooks import hooked_kernels
from mcu_gen.backends.generated.layers import GENERATED_FILE, GENERATED_OPS, MODES, Generated
from mcu_gen.backends.generated.match import covers, eligible

__all__ = ["GENERATED_FILE", "GENERATED_OPS", "MODES", "Generated", "board_supports", "covers", "eligible",
           "generate", "hooked_kernels"]


def board_supports(board) -> bool:
    """The kernels of this package are written for the DSP extension (SMLAD/SXTB16) of cores without
    MVE (Cortex-M33, M4); MVE cores (M55) get generated_mve.py's kernels instead."""
    return bool(getattr(board, "dsp", False)) and not bool(getattr(board, "mve", False))
