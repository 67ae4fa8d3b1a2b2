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
    chunk loads the activations predicated (VCTP.8 at the start, VPST before its loads: zeros past K);
    the weights are zero padded.

    Scheduled for the Cortex-M55's beat overlap (docs/cycles.md: a vector load and a vector
    data-processing instruction that follow each other overlap): loads and VMLADAVAs alternate, the
    next chunk's activations are loaded (into the other pair of registers, p1/q1) while this chunk's
    last MACs run, and the weights rotate through three registers (u, v, s) so that each load goes
    to a register no pending MAC still reads. Per chunk of 2 rows 6 loads and 8 MACs: 12 overlapped
    instructions and 2 MACs back to back (16 cycles for 128 MACs; was 20)."""
    acts = [("p0", "q0"), ("p1", "q1")]
    xs = ["x0", "x1"][:rows]
    lines = ["vctp.8 %[t]"] if tail and nk else []

    def act_loads(j):
        regs = acts[j % 2][:rows]
        if j == nk - 1 and tail:
            return ["vpst" + "t" * (rows - 1)] + [f"vldrbt.8 %q[{r}], [%[{x}]]" for r, x in zip(regs, xs)]
        return [f"vldrb.8 %q[{r}], [%[{x}]], #16" for r, x in zip(regs, xs)]

    lines += act_loads(0)
    for j in range(nk):
        op = "vmladav.s8" if j == 0 else "vmladava.s8"
        p, q = acts[j % 2]
        wl = lambda c, r: f"vldrb.8 %q[{r}], [%[w]], #16"  # noqa: E731  (weights of channel c of the chunk)
        nxt = act_loads(j + 1) if j + 1 < nk else []
        if rows == 2:
            mac = lambda c, x, r: f"{op} %[{'ab'[x]}{c}], %q[{(p, q)[x]}], %q[{r}]"  # noqa: E731
            seq = [wl(0, "u"), mac(0, 0, "u"), wl(1, "v"), mac(0, 1, "u"), wl(2, "s"), mac(1, 0, "v"),
                   wl(3, "u"), mac(1, 1, "v")]
            if nxt and len(nxt) == 2:  # L p', D a2, L q', D b2
                seq += [nxt[0], mac(2, 0, "s"), nxt[1], mac(2, 1, "s")]
            else:  # VPST + two predicated loads (the tail chunk), or nothing left to load
                seq += nxt + [mac(2, 0, "s"), mac(2, 1, "s")]
            seq += [mac(3, 0, "u"), mac(3, 1, "u")]
        else:
            mac = lambda c, r: f"{op} %[a{c}], %q[{p}], %q[{r}]"  # noqa: E731
            seq = [wl(0, "u"), mac(0, "u"), wl(1, "v"), mac(1, "v"), wl(2, "u"), mac(2, "u"), wl(3, "v"),
                   mac(3, "v")] + nxt
        lines += seq
    return lines


def dw_asm(xs: int) -> list:
    """The 9 taps of a depthwise 3x3 group, `xs` bytes between pixels: the row pointer advanced by the
    activation load, or by an ADD where xs > 127 (beyond the post-increment's reach).

    Software pipelined for the Cortex-M55's beat overlap (docs/cycles.md): tap t's two loads
    (activations, weights) alternate with the VADD of tap t - 1's product and tap t's VMUL, so
    that after the first tap every instruction follows one of the other kind (was: two loads, then
    VMUL and VADD back to back)."""
    def loads(ky, kx):
        if xs <= 127:
            return [f"vldrb.s32 %q[a], [%[r{ky}]], #{xs}"], ["vldrb.s32 %q[b], [%[w]], #4"]
        return ([f"vldrb.s32 %q[a], [%[r{ky}]]"] + ([f"add %[r{ky}], %[r{ky}], #{xs}"] if kx < 2 else []),
                ["vldrb.s32 %q[b], [%[w]], #4"])
    lines = []
    for t in range(9):
        la, lb = loads(t // 3, t % 3)
        if t == 0:
            lines += la + lb
        else:
            lines += la + ["vadd.i32 %q[acc], %q[acc], %q[m]"] + lb
        lines.append("vmul.i32 %q[m], %q[a], %q[b]")
    lines.append("vadd.i32 %q[acc], %q[acc], %q[m]")
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
    v["checks"] = s.checks + extra_checks + [allowed(in_arg, out_arg, s.inplace_ok)]
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
                  checks=s.checks + [allowed(0, 13, True), allowed(4, 13, True)], bound=bound(s, 0, 4, 13),
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
