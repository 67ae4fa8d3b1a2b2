"""Views that a program read from a file keeps: ExecuTorch plans a dropped view at its source's
offset instead of emitting a copy, so a program read from a .pte (program.pte.read) must keep
such pairs together when it is re-planned or run by the host reference.

    program = read_program(data)        # pte.read + meta["aliases"] for the planned views
"""
from __future__ import annotations

from mcu_gen.backends.cmsis_nn import SCRATCH_ARG
from mcu_gen.backends.kernels import find_kernels
from mcu_gen.program import pte
from mcu_gen.program.ir import Program, TensorValue


def read_program(data: bytes) -> Program:
    """A .pte as an IR Program, with the views its memory plan implies recorded as aliases."""
    prog = pte.read(data)
    for m in prog.methods:  # every method of a program with several
        views = planned_views(m)
        if views:
            m.meta["aliases"] = views
    return prog


_SIGNATURES: dict = {}
_VARIANT_OF: dict = {}


def _kernel_signatures() -> dict:
    """op -> signature of the portable kernels (the CMSIS-NN adapters' are the same), read once."""
    if not _SIGNATURES:
        kernels = find_kernels()
        _SIGNATURES.update({op: k.signature for op, k in kernels.items()})
        _VARIANT_OF.update({op: k.variant_of for op, k in kernels.items() if k.variant_of})
    return _SIGNATURES


def scratch_arg(op: str) -> int | None:
    """The scratch argument of an operator, if it has one: the cortex_m operators' (SCRATCH_ARG), and an in-place
    variant's, which takes its operator's arguments (variant_of: mcu::quantized_conv2d_pointwise_inplace's ring of
    rows is quantized_conv2d's argument 12)."""
    _kernel_signatures()
    op = _VARIANT_OF.get(op, op)
    return SCRATCH_ARG.get(op.split("::")[-1].rsplit(".", 1)[0]) if op.startswith("cortex_m::") else None


def planned_views(program: Program) -> dict:
    """ExecuTorch drops a view (e.g. the reshape before a classifier) by planning it at its
    source's arena offset: nothing writes it, the memory plan makes it hold the right bytes.
    Returns {view value: the value it shares memory with} for every planned tensor that an
    instruction reads before any instruction writes it (or a program output that nothing writes), paired with the latest earlier output
    (or input) at the same offset, so that re-planning (mcu_gen.firmware.backend_step.apply_backend) keeps
    them together. Outputs are the kernel signatures' 'O' arguments (else the last argument).
    A view has its source's dtype and byte size (a reshape); kernels' scratch arguments, which
    are also read before anything writes them, are never views."""
    sigs = _kernel_signatures()

    def planned(i):
        v = program.values[i]
        return isinstance(v, TensorValue) and not v.is_constant and v.offset is not None

    written, views = set(), {}
    at = {}  # (memory id, arena offset) -> the value last written there
    for i in list(program.inputs) + list(program.states):
        if planned(i):
            written.add(i)
            at[(program.values[i].mem_id, program.values[i].offset)] = i
    for ins in program.instructions:
        sig = sigs.get(ins.op, "")
        outs = ([a for a, c in zip(ins.args, sig) if c == "O"] if len(sig) == len(ins.args) else ins.args[-1:])
        scratch = scratch_arg(ins.op)
        read = []
        for k, a in enumerate(ins.args):
            if k == scratch or a in outs:
                continue
            v = program.values[a]
            if not isinstance(v, TensorValue) and v.kind in ("tensor_list", "optional_tensor_list"):
                read.extend(j for j in v.value if j is not None and j >= 0)  # e.g. cat's inputs
            else:
                read.append(a)
        for a in read:
            if a in written or a in views or not planned(a):
                continue
            src = at.get((program.values[a].mem_id, program.values[a].offset))
            if src is not None and (program.values[src].dtype, program.values[src].nbytes) == (
                    program.values[a].dtype, program.values[a].nbytes):
                views[a] = src
        for o in outs:
            if planned(o):
                written.add(o)
                at[(program.values[o].mem_id, program.values[o].offset)] = o
    for a in program.outputs:  # a program output that is a dropped view (e.g. of the classifier's result)
        if a not in written and a not in views and planned(a):
            src = at.get((program.values[a].mem_id, program.values[a].offset))
            if src is not None and src != a and (program.values[src].dtype, program.values[src].nbytes) == (
                    program.values[a].dtype, program.values[a].nbytes):
                views[a] = src
    return views
