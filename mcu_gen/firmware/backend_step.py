"""The backend step of a build: portable kernels or CMSIS-NN adapters for a planned program.

    choice, data = apply_backend(board, program, data, selection, "auto", cmsis_nn_path)

For CMSIS-NN it swaps in the adapters, sizes their scratch for the board's variant (DSP or MVE),
re-plans and re-writes the program (mcu_gen.backends.cmsis_nn holds the CMSIS-NN facts).
"""
from __future__ import annotations

import warnings

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.backends.cmsis_nn import BACKENDS, BackendChoice, CmsisNnError, CmsisNnWarning, backend_kernels, board_variant, choose_backend, find_kernels, locate, size_scratch
from mcu_gen.errors import BuildError
from mcu_gen.plan import planner
from mcu_gen.program import pte


def apply_backend(board, program, data: bytes, selection, requested: str = "auto", path=None):
    """Chooses the backend for a planned program and, for CMSIS-NN, swaps in the adapters,
    sizes their scratch for the board's variant, re-plans and re-writes the program.
    Returns (BackendChoice, program bytes). Raises builder.BuildError for --backend cmsis-nn
    without CMSIS-NN; warns once (CmsisNnWarning) when auto falls back to portable."""
    if requested not in BACKENDS:
        raise BuildError(f"--backend {requested}: choose one of {', '.join(BACKENDS)}")
    adapters = find_kernels()
    variant_of = {k.op: k.variant_of for k in kernel_registry.find_kernels().values() if k.variant_of}
    if requested == "portable" or not any(variant_of.get(op, op) in adapters for op in program.operators):
        return BackendChoice("portable", requested=requested,
                             how="" if requested == "portable" else "no operator has a CMSIS-NN kernel"), data
    if requested == "auto" and not getattr(board, "toolchain", "arm-none-eabi").startswith("arm"):
        # A RISC-V (or other non-Arm) board: its int8 operators run on the portable kernels.
        return BackendChoice("portable", requested=requested, how=f"CMSIS-NN targets Arm cores, not {board.core}"), data
    try:
        root, how = locate(path, use_pack_manager=True)
        choice = choose_backend(requested, board, root, how)
    except CmsisNnError as e:
        raise BuildError(str(e)) from None
    choice.requested = requested
    if choice.backend != "cmsis-nn":
        if choice.warning:
            warnings.warn(choice.warning, CmsisNnWarning, stacklevel=3)
        return choice, data
    choice.variant = board_variant(board)
    # The planner may have switched instructions to portable in-place variants (same
    # arguments); CMSIS-NN runs the original operator, so switch them back and plan
    # without in-place variants (CMSIS-NN's speed over the RAM those would save).
    for ins in program.instructions:
        if ins.op in variant_of and variant_of[ins.op] in adapters:
            ins.op = variant_of[ins.op]
    choice.selection = backend_kernels(program.operators, "cmsis-nn")
    choice.scratch_bytes = size_scratch(program, choice.variant, choice.selection.kernels)
    planner.plan(program, allow_inplace=False)
    return choice, pte.write(program)
