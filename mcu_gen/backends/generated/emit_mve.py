"""The C++ of the MVE generated kernels (Cortex-M55, generated_mve.py): per layer the values of its
template in templates/generated/mve_*.cpp.j2 (the inline-assembly MAC and depthwise blocks, the layers,
the adds) and ``source``, which writes the whole generated_kernels.cpp of a program."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated import emit_dsp, exactness, hooks, mve_add
from mcu_gen.backends.render import allowed, bound, describe, prefix, render, rows, table
from mcu_gen.paths import KERNELS_GENERATED

# The static C++ every generated MVE file starts with: kernels_generated/mve_prelude.h.
PRELUDE = (KERNELS_GENERATED / "mve_prelude.h").read_text(encoding="utf-8")
CHECKS_MARKER = "// Load-time checks"


def mac_asm(nk: int, tail: int, rows: int) -> list:
    """The MAC block of `rows` (2 or 1) rows x 4 channels over K = nk chunks of 16 (the last one `tail`
    bytes, 0 = whole). The first chunk starts the accumulators (VMLADAV), the others add. A partial last
    chunk loads the activations predicated (VCTP.8, zeros past K); the weights are zero padded."""
    xs = ["x0", "x1"][:rows]
    lines = []
    for j in range(nk):
        op = "vmladav.s8" if j == 0 else "vmladava.s8"
        if j == nk - 1 and tail:
            lines.append("vctp.8 %[t]")
            lines.append("vpst" + "t" * (rows - 1))
            lines += [f"vldrbt.8 %q[{q}], [%[{x}]]" for q, x in zip("pq", xs)]
        else:
            lines += [f"vldrb.8 %q[{q}], [%[{x}]], #16" for q, x in zip("pq", xs)]
        for c in range(4):
            wq = "u" if c % 2 == 0 else "v"
            lines.append(f"vldrb.8 %q[{wq}], [%[w]], #16")
            lines.append(f"{op} %[a{c}], %q[p], %q[{wq}]")
            if rows == 2:
                lines.append(f"{op} %[b{c}], %q[q], %q[{wq}]")
    return lines


def dw_asm(xs: int) -> list:
    """The 9 taps of a depthwise 3x3 group, `xs` bytes between pixels: the row pointer advanced by the
    activation load, or by an ADD where xs > 127 (beyond the post-increment's reach)."""
    lines = []
    for ky in range(3):
        for kx in range(3):
            if xs <= 127:
                lines.append(f"vldrb.s32 %q[a], [%[r{ky}]], #{xs}")
            else:
                lines.append(f"vldrb.s32 %q[a], [%[r{ky}]]")
                if kx < 2:
                    lines.append(f"add %[r{ky}], %[r{ky}], #{xs}")
            lines += ["vldrb.s32 %q[b], [%[w]], #4", "vmul.i32 %q[a], %q[a], %q[b]", "vadd.i32 %q[acc], %q[acc], %q[a]"]
    return lines


def mac_struct(nk: int, tail: int) -> str:
    """The C++ struct MacNK_TAIL: the MAC blocks of 2 rows and of 1 row (templates/generated/mve_mac_struct.cpp.j2)."""
    return render("generated/mve_mac_struct.cpp.j2", nk=nk, tail=tail, two=mac_asm(nk, tail, 2), one=mac_asm(nk, tail, 1))


def dw_struct(xs: int) -> str:
    """The C++ struct DwXS: the 9 taps of a depthwise group (templates/generated/mve_dw_struct.cpp.j2)."""
    return render("generated/mve_dw_struct.cpp.j2", xs=xs, taps=dw_asm(xs))


def _pad4(values, fill=0) -> np.ndarray:
    v = np.asarray(values, np.int64).reshape(-1)
    n4 = (v.size + 3) // 4 * 4
    return np.concatenate([v, np.full(n4 - v.size, fill, np.int64)])


def _requant_tables(pre: str, l, init) -> dict:
    """Init, Mult, Left (the left shifts; scalar mode: the shifts), Right (minus the right shifts) and
    Mask (-1 where a right shift rounds) per channel, padded to whole vectors."""
    s = l.src
    shifts = np.asarray(s.shifts, np.int64)
    right, left = np.maximum(-shifts, 0), np.maximum(shifts, 0)
    return {"init": table("int32_t", f"{pre}Init", _pad4(init), per_line=8, align=16),
            "mult": table("int32_t", f"{pre}Mult", _pad4(s.mults), per_line=8, align=16),
            "left": table("int32_t", f"{pre}Left", _pad4(shifts if l.mode == "scalar" else left), per_line=16, align=16),
            "right": table("int32_t", f"{pre}Right", _pad4(-right), per_line=16, align=16),
            "mask": table("int32_t", f"{pre}Mask", _pad4(np.where(right > 0, -1, 0)), per_line=16, align=16)}


_MODE = {"fast": 0, "vector": 1, "scalar": 2}
_IO_ARGS = {"pointwise": (0, 13), "conv": (0, 13), "linear": (0, 11), "depthwise3x3": (0, 14)}


def _layer_source(l) -> tuple:
    """(C++ of one layer, name of the inline-assembly struct it uses: MacN_T or DwX)."""
    s = l.src
    pre = prefix(s.name)
    in_arg, out_arg = _IO_ARGS[s.kind]
    v = {"name": s.name, "instruction": int(s.instruction), "op": s.op, "pre": pre, "macs": f"{s.macs:,}",
         "mode": _MODE[l.mode], "mode_name": l.mode, "kind": s.kind, "out_offset": s.out_offset,
         "act_min": s.act_min, "act_max": s.act_max,
         "weight_bytes": f"{l.weight_bytes:,}", "ring_arg": None, "n": getattr(s, "n", None),
         "weights": table("int8_t", f"{pre}Weights", l.packed_weights(), per_line=32, align=16)}
    extra_checks = []
    if s.kind == "depthwise3x3":
        g, in_scratch = l.ring
        ring_bytes = 3 * (s.w + 2 * s.pad_w) * g
        v.update(_requant_tables(pre, l, l.depthwise_init()), helper=f"Dw{g}", g=g, ring_bytes=ring_bytes,
                 stack_ring=not in_scratch, h=s.h, w=s.w, c=s.c, oh=s.oh, ow=s.ow, stride=s.stride,
                 pad_h=s.pad_h, pad_w=s.pad_w, zero_point=-s.in_offset,
                 what=(f"3x3 depthwise, {s.c} channels, {s.h}x{s.w} -> {s.oh}x{s.ow}, stride {s.stride}, "
                       f"padding {s.pad_h},{s.pad_w}; rows of {g} channels through a ring of {ring_bytes} bytes in "
                       + ("the scratch tensor" if in_scratch else "the stack")))
        if in_scratch:  # the ring: the scratch tensor (argument 13), apart from the input and output
            v["ring_arg"], extra_checks = 13, ["apart(ctx, 13, 0)", "apart(ctx, 13, 14)"]
    else:
        v.update(_requant_tables(pre, l, s.acc_init), helper=f"Mac{l.nk}_{s.k % 16}", k=s.k, rows_count=s.rows,
                 inplace=s.inplace_ok, what=describe(s))
        if s.kind == "conv":
            kp = l.nk * 16
            v.update(what=describe(s, gathered=kp), kp=kp, geometry=list(s.geometry), zero_point=s.zero_point,
                     rows=rows(s), ring_arg=emit_dsp.ring_arg(s),  # in place: the ring of saved rows is the scratch
                     helper=f"Mac{l.nk}_0")  # the windows are zero padded: no tail predication
    v["bound"] = bound(s, in_arg, out_arg, v["ring_arg"])
    v["checks"] = s.checks + extra_checks + [allowed(in_arg, out_arg, s.inplace_ok, s)]
    return render("generated/mve_layer.cpp.j2", **v), v["helper"]


def checks_source() -> str:
    """The load-time checks (tensor_is, constant_is, ..., output_allowed) of the DSP prelude
    (kernels_generated/dsp_prelude.h), shared so that both generators match instructions the same way."""
    i = emit_dsp.PRELUDE.index(CHECKS_MARKER)
    return "// " + "-" * 75 + "\n" + emit_dsp.PRELUDE[i:]


def _add_layer_source(l) -> str:
    s, p = l.src, l.plan
    w32 = lambda x: int(exactness.wrap_i32(x))  # noqa: E731  (int32 two's complement, as the lanes hold it)
    return render("generated/mve_add_layer.cpp.j2", name=s.name, instruction=int(s.instruction), op=s.op, numel=s.numel,
                  per_vector=p.instructions_per_vector, describe=p.describe(),
                  checks=s.checks + [allowed(0, 13, True, s), allowed(4, 13, True, s)], bound=bound(s, 0, 4, 13),
                  scale_a=w32(p.scale_a), scale_b=w32(p.scale_b), act_min=s.act_min, act_max=s.act_max,
                  ca=w32(-s.a_zp * p.scale_a), cb=w32(-s.b_zp * p.scale_b), ma=w32(s.a_mult), mb=w32(s.b_mult),
                  mo=w32(s.out_mult), zo=s.out_zp, body=["dlstp.32 lr, %[n]", "1:", *mve_add.add_asm(s, p), "letp lr, 1b"])


def source(layers, by_op: dict, g) -> str:
    """The generated_kernels.cpp of these MVE layers (generated_mve.eligible); records each operator's
    prepare function in ``g``. ``by_op``: the selected library kernel of each operator (the fallback)."""
    bodies, helpers = [], {}
    for l in layers:
        if l.kind == "add":
            bodies.append(_add_layer_source(l))
            continue
        text, helper = _layer_source(l)
        bodies.append(text)
        if helper.startswith("Dw"):
            helpers[helper] = dw_struct(int(helper[2:]))
        else:
            nk, tail = (int(v) for v in helper[3:].split("_"))
            helpers[helper] = mac_struct(nk, tail)
    parts = [PRELUDE, emit_dsp.ROWS_SOURCE, *helpers.values(), checks_source(), *bodies]
    parts += hooks.prepare_hooks_source(layers, by_op, g)
    return "\n".join(parts)
