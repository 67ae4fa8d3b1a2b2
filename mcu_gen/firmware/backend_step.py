"""The backend step of a build: portable kernels or CMSIS-NN adapters for a program.

    choice = apply_backend(board, program, "auto", cmsis_nn_path)

Runs before the in-place pass and the planner (mcu_gen/plan/inplace_pass.py): for CMSIS-NN it
chooses the adapters and sizes their scratch for the board's variant (DSP or MVE); the build then
plans without in-place variants (mcu_gen.backends.cmsis_nn holds the CMSIS-NN facts).
"""
from __future__ import annotations

import warnings

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.backends.cmsis_nn import BACKENDS, BackendChoice, CmsisNnError, CmsisNnWarning, backend_kernels, board_variant, choose_backend, find_kernels, locate, size_scratch
from mcu_gen.errors import BuildError


def apply_backend(board, program, requested: str = "auto", path=None) -> BackendChoice:
    """Chooses the backend for a program not planned yet (or a .pte's, planned elsewhere) and, for
    CMSIS-NN, selects the adapters and sizes their scratch for the board's variant; planning comes
    after (the build plans a CMSIS-NN program without in-place variants). Raises builder.BuildError
    for --backend cmsis-nn without CMSIS-NN; warns once (CmsisNnWarning) when auto falls back to
    portable."""
    if requested not in BACKENDS:
        raise BuildError(f"--backend {requested}: choose one of {', '.join(BACKENDS)}")
    adapters = find_kernels()
    variant_of = {k.op: k.variant_of for k in kernel_registry.find_kernels().values() if k.variant_of}
    if requested == "portable" or not any(variant_of.get(op, op) in adapters for op in program.operators):
        return BackendChoice("portable", requested=requested,
                             how="" if requested == "portable" else "no operator has a CMSIS-NN kernel")
    if requested == "auto" and not getattr(board, "toolchain", "arm-none-eabi").startswith("arm"):
        # A RISC-V (or other non-Arm) board: its int8 operators run on the portable kernels.
        return BackendChoice("portable", requested=requested, how=f"CMSIS-NN targets Arm cores, not {board.core}")
    try:
        root, how = locate(path, use_pack_manager=True)
        choice = choose_backend(requested, board, root, how)
    except CmsisNnError as e:
        raise BuildError(str(e)) from None
    choice.requested = requested
    if choice.backend != "cmsis-nn":
        if choice.warning:
            warnings.warn(choice.warning, CmsisNnWarning, stacklevel=3)
        return choice
    choice.variant = board_variant(board)
    # A program built here has no in-place variants yet (the pass runs after this step); a .pte's
    # plan may name portable in-place variants (same arguments): CMSIS-NN runs the original
    # operator, so those go back to it and the build plans the .pte again, without in-place
    # variants (CMSIS-NN's speed over the RAM those would save).
    for ins in program.instructions:
        if ins.op in variant_of and variant_of[ins.op] in adapters:
            ins.op = variant_of[ins.op]
    choice.selection = backend_kernels(program.operators, "cmsis-nn")
    choice.scratch_bytes = size_scratch(program, choice.variant, choice.selection.kernels)
    return choice
