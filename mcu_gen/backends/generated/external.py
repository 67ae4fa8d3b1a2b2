"""The program a firmware with generated layers embeds: the constants only those layers use (their weights, which
each layer holds itself, reordered and widened, in its own arrays) leave the program as ExecuTorch's external
constants (Tensor.extra_tensor_info: location EXTERNAL, a key, no data), so the image keeps each weight once.

A generated layer finds its instruction again at load by a CRC-32 of each constant it was generated from
(``constant_is`` in kernels_generated/dsp_prelude.h); for an external constant it compares the key instead,
which names the same bytes: ``mcu-gen:<CRC-32, 8 hex digits>:<size in bytes>``. The runtime gives such a tensor
a null data pointer and loads the program only if every instruction with one runs a layer listed in
``kExternalOwners`` (``MCU_EXTERNAL_CONSTANTS``, runtime_core/include/mcu/program.h); a library kernel is
never given one. The build's model.pte keeps every constant: that is the program to upload or run elsewhere."""
from __future__ import annotations

import re
import zlib

import numpy as np

from mcu_gen.program.ir import Program, TensorValue, tensor_args

# Constants smaller than this stay in the program: their key and table (about 48 bytes) would cost more.
EXTERNAL_MIN_BYTES = 64

_CONSTANT_CHECK = re.compile(r"\bconstant_is\(ctx, (\d+), ")


def external_key(t: TensorValue) -> str:
    """The key of constant ``t`` (what the firmware's external_key_is compares)."""
    crc = zlib.crc32(np.ascontiguousarray(t.data).tobytes()) & 0xFFFFFFFF
    return f"mcu-gen:{crc:08x}:{t.nbytes}"


def _checked_constants(program: Program, layer) -> set:
    """The value indices of the constants ``layer`` checks by content at load (its constant_is checks)."""
    args = program.instructions[layer.instruction].args
    return {args[int(m.group(1))] for check in layer.checks for m in _CONSTANT_CHECK.finditer(check)}


def _uses(program: Program) -> dict:
    """tensor value index -> the number of places the program reads it (instruction arguments, tensor list
    items, inputs, outputs, states)."""
    uses: dict = {}
    for ins in program.instructions:
        for a in tensor_args(program, ins.args):
            uses[a] = uses.get(a, 0) + 1
    for a in list(program.inputs) + list(program.outputs) + list(program.states):
        uses[a] = uses.get(a, 0) + 1
    return uses


def external_constants(program: Program, layers) -> tuple:
    """(external, owners): ``external`` maps the value index of each constant that only generated layers read,
    each of them checking it by content at load, and of at least EXTERNAL_MIN_BYTES, to its key; ``owners`` are
    the names of the layers that read one (their functions are kExternalOwners). Empty for a program with
    several methods (they run the library kernels)."""
    if program.more_methods or not layers:
        return {}, []
    uses = _uses(program)
    checked: dict = {}  # value index -> the layers that check it
    for layer in layers:
        for v in _checked_constants(program, layer):
            checked.setdefault(v, []).append(layer)
    external, owners = {}, []
    for v, by in checked.items():
        t = program.values[v]
        if not (isinstance(t, TensorValue) and t.is_constant and t.nbytes >= EXTERNAL_MIN_BYTES):
            continue
        if uses.get(v, 0) != len(by):  # read elsewhere too (another instruction, another argument)
            continue
        external[v] = external_key(t)
        owners += [layer.name for layer in by if layer.name not in owners]
    order = {layer.name: k for k, layer in enumerate(layers)}
    return dict(sorted(external.items())), sorted(owners, key=order.__getitem__)


def owners_source(owners: list) -> str:
    """The C++ table of the layers that hold their program's external constants (kExternalOwners, program.h),
    appended to the generated source."""
    if not owners:
        return ""
    items = "".join(f"    &generated::{name},\n" for name in owners)
    return ("\nnamespace mcu {\n"
            "// The generated layers that hold the constants the embedded program has as external (no data in the\n"
            "// program): only instructions bound to one of these may have such an argument (program.h).\n"
            f"extern const KernelFn kExternalOwners[{len(owners)}];\nconst KernelFn kExternalOwners[{len(owners)}] = {{\n{items}}};\n"
            "}  // namespace mcu\n")
