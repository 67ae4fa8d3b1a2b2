"""The C++ that the backends write per build is rendered from Jinja2 templates in templates/: the
generated kernels' layers (templates/generated/*.cpp.j2, DSP and MVE alike) and the kernel and delegate
tables (templates/kernels/). The Python side chooses the values (sizes, constants, instruction
sequences) and renders a template with them. This module holds what they share: the template
environment, constant tables as template values, and the values that describe a generated layer."""
from __future__ import annotations

from functools import lru_cache

import jinja2
import numpy as np

from mcu_gen.paths import TEMPLATES



@lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)


def render(template: str, **values) -> str:
    """templates/<template> rendered with ``values``."""
    return environment().get_template(template).render(**values)


def table(ctype: str, name: str, values, per_line: int = 16, align: int = 0, fmt: str = "int") -> dict:
    """A constant array for the `table` macro (templates/generated/macros.j2): its element type, name,
    length, alignment and its lines of literals. ``fmt``: "int" (decimal), "hex" (uint32 words, 0x...u),
    "pair" (int16 pairs packed by pair(lo, hi): ``values`` holds lo, hi, lo, hi, ...)."""
    v = np.asarray(values).reshape(-1)
    if fmt == "pair":
        lits = [f"pair({int(a)}, {int(b)})" for a, b in v.reshape(-1, 2)]
    elif fmt == "hex":
        lits = [f"0x{int(x) & 0xFFFFFFFF:08x}u" for x in v]
    else:
        lits = [str(int(x)) for x in v]
    lines = [", ".join(lits[i:i + per_line]) for i in range(0, len(lits), per_line)]
    return {"ctype": ctype, "name": name, "count": len(lits), "align": align, "lines": lines}


def prefix(name: str) -> str:
    """The prefix of a layer's constants in C++: conv_3 -> kConv3."""
    return f"k{name.title().replace('_', '')}"


def allowed(in_arg: int, out_arg: int, inplace: bool, layer=None) -> str:
    """The load-time check that the output tensor may lie where it does (over the input only in place).
    Where the build planned both tensors (``layer.places``, set_places()), the layer's `matches` checks them at
    those places and their shapes, so this is known now: "true", or "false" (the layer never matches); else
    the check at load (output_allowed, which decodes both tensors: a deeper stack on the load path)."""
    places, sizes = getattr(layer, "places", {}), getattr(layer, "place_bytes", {})
    if in_arg in places and out_arg in places and in_arg in sizes and out_arg in sizes:
        (mi, oi), (mo, oo) = places[in_arg], places[out_arg]
        apart = mi != mo or oo + sizes[out_arg] <= oi or oi + sizes[in_arg] <= oo
        return "true" if apart or (inplace and mi == mo and oi == oo) else "false"
    return f"output_allowed(ctx, {in_arg}, {out_arg}, {str(bool(inplace)).lower()})"


def set_places(program, layers) -> None:
    """Gives each layer (a generated layer's source layer: ``instruction``) ``places``: argument index ->
    (memory id, arena offset) of every planned tensor of its instruction, the place the build planned it at."""
    for l in layers:
        ins = program.instructions[l.instruction]
        places, sizes = {}, {}
        for k, v in enumerate(ins.args):
            t = program.values[v] if 0 <= v < len(program.values) else None
            if getattr(t, "offset", None) is not None and not t.is_constant:
                places[k] = (int(t.mem_id), int(t.offset))
                sizes[k] = int(t.nbytes)
        l.places, l.place_bytes = places, sizes


def bound(layer, *args) -> list:
    """The tensors a layer's kernel function reads by address, in the order it reads them (input, output, the
    ring's tensor; None: no such argument): the `bound` of the `matches` macro, each {arg, mem, offset} with the
    place set_places() found (offset None: not planned, a constant: its argument decoded on each call)."""
    places = getattr(layer, "places", {})
    return [{"arg": a, "mem": places[a][0] if a in places else 1, "offset": places[a][1] if a in places else None}
            for a in args if a is not None]


def describe(l, gathered: int | None = None) -> str:
    """What a GEMM-like layer computes, for its comment. ``gathered``: the bytes of one gathered
    window (MVE convolutions), else the DSP wording (taps with padding)."""
    n = f"{l.n_out} (computed as {l.n})" if getattr(l, "n_out", 0) else l.n
    if l.kind == "conv":
        h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
        tail = f"{gathered} bytes gathered" if gathered is not None else f"{l.k} with padding"
        return (f"{kh}x{kw} convolution {cin} -> {n} channels, {h}x{w} -> {oh}x{ow}, stride {sh},{sw}, "
                f"padding {ph},{pw} (windows of {kh * kw * cin} taps, {tail})")
    if l.kind == "pointwise":
        return f"1x1 convolution {l.k} -> {n} channels over {l.rows} pixels"
    k = f"{l.k_in} (rows padded to {l.k})" if getattr(l, "k_in", 0) else l.k
    return f"fully connected {k} -> {n}, {l.rows} row(s)"


def rows(l) -> dict:
    """The input rows of a convolution (the `rows` macro): the input itself, or in place the ring of
    l.ring_rows rows in the scratch tensor."""
    h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
    return {"h": h, "w": w, "cin": cin, "sh": sh, "ph": ph, "ow": ow, "n": getattr(l, "n_out", 0) or l.n,
            "ring_rows": l.ring_rows}  # the output's channels (a narrow layer's rows of n: copied out, n_out)
