"""How the firmware reaches the generated layers (DSP and MVE alike): a prepare function per operator
that returns the generated layer an instruction is, else the library kernel, each layer's data
pointers bound at load, and the kernel selection rewired to the prepare functions."""
from __future__ import annotations

from mcu_gen.backends.generated.layers import Generated
from mcu_gen.backends.generated.render import render


def _slug(op: str) -> str:
    return op.replace("::", "_").replace(".", "_")


def prepare_hooks_source(layers, by_op: dict, g: Generated) -> list:
    """The end of a generated file (in namespace mcu::kernels, templates/generated/prepare_hooks.cpp.j2):
    the library kernels' declarations and, per operator, the prepare function that returns the generated
    layer an instruction is (its checks at load) or else the library kernel; records each in ``g.prepare``.
    Shared by the DSP and MVE files."""
    ops = []
    for op in dict.fromkeys(l.op for l in layers):
        lib = by_op[op]
        g.prepare[op] = name = f"generated_prepare_{_slug(op)}"
        ops.append({"op": op, "name": name, "fn": lib.fn, "prepare": lib.prepare, "backend": lib.backend,
                    "layers": [l.name for l in layers if l.op == op]})
    return [render("prepare_hooks.cpp.j2", ops=ops)]


def bind_at_load(source: str, layers) -> str:
    """Generated layers bound at load, without the value cache (issue 25): each layer's runtime function
    reads the data pointers of its tensors from a small array (one pointer per tensor it touches) that its
    _matches() fills once, at load, after every check held; the checks decode the arguments on demand.
    So a generated layer needs neither every value decoded nor any argument decoding per call. A layer
    matches only the instruction it was generated for (its index, ctx.instruction_), so two identical
    instructions never share (and re-bind) one layer."""
    import re

    for layer in layers:
        name = layer.name
        run = f"Error {name}(const KernelContext& ctx) {{"
        i = source.index(run)
        j = source.index("\n}\n", i)
        body = source[i:j]
        args = list(dict.fromkeys(int(a) for a in re.findall(r"ctx\.decoded_data\((\d+)\)", body)))
        if not args:
            continue
        slot = {a: k for k, a in enumerate(args)}
        body = re.sub(r"ctx\.decoded_data\((\d+)\)", lambda m: f"{name}_bound[{slot[int(m.group(1))]}]", body)
        source = source[:i] + body + source[j:]
        head = f"bool {name}_matches(const KernelContext& ctx) {{\n  return "
        m0 = source.index(head)
        m1 = source.index(";\n}\n", m0)
        expr = source[m0 + len(head):m1]
        binds = "".join(f"  {name}_bound[{k}] = ctx.tensor({a}).data;\n" for a, k in slot.items())
        source = (source[:m0] + f"void* {name}_bound[{len(args)}];  // data pointers, bound at load\n"
                  + f"bool {name}_matches(const KernelContext& ctx) {{\n"
                  + f"  if (ctx.instruction_ != {int(layer.instruction)} || !({expr})) return false;\n"
                  + binds + "  return true;\n}\n" + source[m1 + len(";\n}\n"):])
    return source


def hooked_kernels(kernels, g: Generated):
    """The selection with each generated operator's entry given its generated prepare function."""
    from dataclasses import replace

    return [replace(k, prepare=g.prepare[k.op]) if k.op in g.prepare else k for k in kernels]
