"""How the firmware reaches the generated layers (DSP and MVE alike): a prepare function per operator
that returns the generated layer an instruction is, else the library kernel, and the kernel selection
rewired to the prepare functions. (Each layer's data pointers are bound at load by its matches():
the `matches` macro of templates/generated/macros.j2.)"""
from __future__ import annotations

from mcu_gen.backends.generated.layers import Generated
from mcu_gen.backends.render import render


def _slug(op: str) -> str:
    return op.replace("::", "_").replace(".", "_")


def prepare_hooks_source(layers, by_op: dict, g: Generated) -> list:
    """The end of a generated file (closes mcu::generated; in mcu::kernels, templates/generated/prepare_hooks.cpp.j2):
    the library kernels' declarations and, per operator, the prepare function that returns the generated
    layer an instruction is (its checks at load) or else the library kernel; records each in ``g.prepare``.
    Shared by the DSP and MVE files."""
    ops = []
    for op in dict.fromkeys(l.op for l in layers):
        lib = by_op[op]
        g.prepare[op] = name = f"generated_prepare_{_slug(op)}"
        ops.append({"op": op, "name": name, "fn": lib.fn, "prepare": lib.prepare, "backend": lib.backend,
                    "layers": [l.name for l in layers if l.op == op]})
    return [render("generated/prepare_hooks.cpp.j2", ops=ops)]


def hooked_kernels(kernels, g: Generated):
    """The selection with each generated operator's entry given its generated prepare function."""
    from dataclasses import replace

    return [replace(k, prepare=g.prepare[k.op]) if k.op in g.prepare else k for k in kernels]
