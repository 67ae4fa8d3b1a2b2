"""When may an operator's output share memory with one of its inputs?

A kernel says so in its registry line (mcu_gen/backends/kernels.py):

    // mcu-gen-kernel: op=aten::relu.out ... inplace=0
    // mcu-gen-kernel: op=mcu::quantized_depthwise_conv2d_inplace.out ... inplace=0
    //     inplace_rule=depthwise_channel variant_of=cortex_m::quantized_depthwise_conv2d.out

``inplace=K`` lists the argument positions the out may start at the same arena
offset as; ``inplace_rule`` names the condition (below) that must hold for the
instruction's actual shapes and attributes (default ``elementwise``). A kernel
with ``variant_of=OP`` takes OP's arguments unchanged and works in place; the
planner swaps OP for it only where it places the out over the input. A rule
may ask for a scratch buffer (argument position, bytes) that the variant uses.

Every rule below was checked against the kernel code it is attached to: the
kernel reads each input byte before any write can reach it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

from mcu_gen.backends.generated.layers import conv_ring_rows
from mcu_gen.program.ir import DTYPE_SIZES, Instruction, Program, ScalarValue, TensorValue

CHANNELS_LAST = (0, 2, 3, 1)


@dataclass(frozen=True)
class InPlace:
    arg: int  # argument position the out shares memory with
    scratch: Optional[tuple] = None  # (argument position, bytes) the kernel needs, or None


def _tensor(program: Program, ins: Instruction, pos: int) -> Optional[TensorValue]:
    if pos >= len(ins.args):
        return None
    v = program.values[ins.args[pos]]
    return v if isinstance(v, TensorValue) else None


def _scalar(program: Program, ins: Instruction, pos: int):
    v = program.values[ins.args[pos]]
    return v.value if isinstance(v, ScalarValue) else None


def out_value(ins: Instruction, signature: str) -> Optional[int]:
    """The single out tensor of an instruction whose signature ends in 'OO' (out, returned out)."""
    if not signature.endswith("OO") or signature.count("O") != 2 or len(ins.args) != len(signature):
        return None
    return ins.args[-2]


def _nhwc(t: TensorValue):
    """(N, H, W, C) of a 4-d channels-last tensor, else None."""
    if len(t.shape) != 4 or t.dim_order != CHANNELS_LAST:
        return None
    n, c, h, w = t.shape
    return n, h, w, c


def elementwise(program, ins, pos, out) -> Optional[InPlace]:
    """out[i] = f(in[i], ...) at the same memory index: same shape, dtype and layout."""
    t = _tensor(program, ins, pos)
    if t is None or t.shape != out.shape or t.dtype != out.dtype or t.dim_order != out.dim_order:
        return None
    return InPlace(pos)


def narrowing(program, ins, pos, out) -> Optional[InPlace]:
    """out[i] = f(in[i]) with out's elements no wider than in's (fp32 -> int8 quantize): same shape and
    layout; the kernel reads element i before it writes out element i, in order, and out element i's
    bytes [i*so, (i+1)*so) end before input element i+1's start ((i+1)*si >= (i+1)*so)."""
    t = _tensor(program, ins, pos)
    if pos != 0 or t is None or t.shape != out.shape or t.dim_order != out.dim_order:
        return None
    if DTYPE_SIZES.get(out.dtype, 99) > DTYPE_SIZES.get(t.dtype, 0):
        return None
    return InPlace(pos)


def widening(program, ins, pos, out) -> Optional[InPlace]:
    """out[i] = f(in[i]) with out's elements at least as wide as in's (int8 -> fp32 dequantize): same
    shape and layout; the kernel runs from the last element, reading element i before it writes out
    element i, whose bytes [i*so, (i+1)*so) start at or after input element i's (so >= si): only
    elements i and later, read already."""
    t = _tensor(program, ins, pos)
    if pos != 0 or t is None or t.shape != out.shape or t.dim_order != out.dim_order:
        return None
    if DTYPE_SIZES.get(out.dtype, 0) < DTYPE_SIZES.get(t.dtype, 99):
        return None
    return InPlace(pos)


def depthwise_channel(program, ins, pos, out) -> Optional[InPlace]:
    """Depthwise convolution (depth multiplier 1, channels-last) one channel at a time:
    the kernel copies input channel c to scratch (H*W bytes), then writes output
    channel c, which only lands on channel-c bytes of the input."""
    t = _tensor(program, ins, 0)
    if pos != 0 or t is None or t.dtype != "int8" or out.dtype != "int8":
        return None
    a, b = _nhwc(t), _nhwc(out)
    if a is None or b is None or a[0] != b[0] or a[3] != b[3] or out.numel > t.numel:
        return None
    if _scalar(program, ins, 6) != 1:  # depth_multiplier
        return None
    return InPlace(0, (13, a[1] * a[2]))


def pointwise(program, ins, pos, out) -> Optional[InPlace]:
    """1x1 convolution, stride 1, no padding, groups 1, channels-last: the kernel copies
    one pixel's Cin bytes to scratch, then writes its Cout outputs, which only land on this
    pixel's or earlier pixels' bytes (Cout <= Cin, pixels in order), or on this pixel's or
    later pixels' bytes (Cout > Cin: output pixel p starts at p*Cout >= p*Cin; pixels in
    reverse order, so the later ones are consumed already)."""
    t, w = _tensor(program, ins, 0), _tensor(program, ins, 1)
    if pos != 0 or t is None or w is None or t.dtype != "int8" or out.dtype != "int8":
        return None
    a, b = _nhwc(t), _nhwc(out)
    if a is None or b is None or len(w.shape) != 4:
        return None
    cout, kh, kw, cin = w.shape
    if (kh, kw) != (1, 1) or cin != a[3] or cout != b[3] or a[:3] != b[:3]:
        return None
    stride, padding = _scalar(program, ins, 3) or [1], _scalar(program, ins, 4) or [0]
    if any(s != 1 for s in stride) or any(p != 0 for p in padding):
        return None
    return InPlace(0, (12, cin))


def conv_rows(program, ins, pos, out) -> Optional[InPlace]:
    """k x k convolution (not 1x1: the pointwise rule), any stride and padding, dilation 1, groups 1,
    batch 1, channels-last, output written row by row over the input: before output row r is written,
    the input rows its bytes reach that this or a later row still reads are copied into a ring of rows
    (scratch, conv_ring_rows() rows of W * Cin bytes); saved rows are read from the ring, the others are
    still intact in the input."""
    t, w = _tensor(program, ins, 0), _tensor(program, ins, 1)
    if pos != 0 or t is None or w is None or t.dtype != "int8" or out.dtype != "int8" or w.dtype != "int8":
        return None
    a, b = _nhwc(t), _nhwc(out)
    if a is None or b is None or len(w.shape) != 4 or a[0] != 1 or b[0] != 1:
        return None
    cout, kh, kw, cin = w.shape
    if (kh, kw) == (1, 1) or cin != a[3] or cout != b[3]:
        return None
    dilation = _pair(_scalar(program, ins, 5), 1)
    stride, padding = _pair(_scalar(program, ins, 3), 1), _pair(_scalar(program, ins, 4), 0)
    if dilation != (1, 1) or min(stride) < 1 or min(padding) < 0:
        return None
    rows = conv_ring_rows(a[1], a[2] * cin, b[1], b[2] * cout, stride[0], padding[0])
    return InPlace(0, (12, rows * a[2] * cin))


def binary_same(program, ins, pos, out) -> Optional[InPlace]:
    """int8 add/mul whose two operands and out have one shape, dtype and dim_order: the kernel's
    fast path reads index i of both operands before it writes index i."""
    if elementwise(program, ins, pos, out) is None:
        return None
    other = 4 if pos == 0 else 0
    o = _tensor(program, ins, other)
    if o is None or o.shape != out.shape or o.dtype != out.dtype or o.dim_order != out.dim_order:
        return None
    return InPlace(pos)


def _pair(v, default):
    v = [int(x) for x in (v or [])]
    if not v:
        return default, default
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def pool_forward(program, ins, pos, out) -> Optional[InPlace]:
    """Max pooling, channels-last, written pixel by pixel in raster order: safe when
    no output pixel's window starts before that pixel's own index (each channel
    is read before it is written)."""
    t = _tensor(program, ins, 0)
    if pos != 0 or t is None or t.dtype != out.dtype:
        return None
    a, b = _nhwc(t), _nhwc(out)
    if a is None or b is None or a[0] != b[0] or a[3] != b[3] or out.numel > t.numel:
        return None
    kernel, stride, padding = (_scalar(program, ins, i) for i in (1, 2, 3))
    dilation, ceil_mode = _scalar(program, ins, 4), _scalar(program, ins, 5)
    if ceil_mode or any(d != 1 for d in (dilation or [1])):
        return None
    kh, kw = _pair(kernel, 1)
    sh, sw = _pair(stride, 1) if stride else (kh, kw)
    ph, pw = _pair(padding, 0)
    _, h, w, _ = a
    _, oh_n, ow_n, _ = b
    for oh in range(oh_n):
        for ow in range(ow_n):
            first = max(oh * sh - ph, 0) * w + max(ow * sw - pw, 0)
            if first < oh * ow_n + ow:
                return None
    return InPlace(0)


def _root(program: Program, v: int) -> int:
    """The buffer a value lives in: through views (meta["aliases"]) and concatenation slices."""
    links = dict(program.meta.get("aliases", {}))
    links.update({k: r for k, (r, _) in program.meta.get("slices", {}).items()})
    seen = set()
    while v in links and v not in seen:
        seen.add(v)
        v = links[v]
    return v


def scatter_self(program, ins, pos, out) -> Optional[InPlace]:
    """scatter / scatter_add / select_scatter / slice_scatter: out = self, then src (or a value) goes
    to the indexed places. Over self when out has self's shape, dtype and layout and nothing else the
    instruction reads (src, index) lives in self's buffer: the kernel's copy of self is then a no-op and
    it reads only src and index afterwards."""
    if pos != 0 or elementwise(program, ins, pos, out) is None:
        return None
    self_root = _root(program, ins.args[0])
    for a in ins.args[1:-2]:
        if isinstance(program.values[a], TensorValue) and _root(program, a) == self_root:
            return None
    return InPlace(0)


RULES: dict[str, Callable] = {
    "elementwise": elementwise,
    "narrowing": narrowing,
    "widening": widening,
    "depthwise_channel": depthwise_channel,
    "pointwise": pointwise,
    "pool_forward": pool_forward,
    "conv_rows": conv_rows,
    "binary_same": binary_same,
    "scatter_self": scatter_self,
}


@lru_cache(maxsize=1)
def default_kernels() -> dict:
    """The kernel registry (op -> Kernel) whose registry lines the rules read by default."""
    from mcu_gen.backends.kernels import find_kernels

    return find_kernels()


def options(program: Program, ins: Instruction, available: dict) -> list:
    """[(kernel, InPlace)] ways to run ``ins`` with its out over one of its inputs:
    its own kernel, or a variant kernel that replaces it."""
    out_kernels = []
    own = available.get(ins.op)
    if own is not None:
        out_kernels.append(own)
    base = own.variant_of if own is not None and own.variant_of else ins.op
    out_kernels += [k for k in available.values() if k.variant_of == base and k is not own]
    found = []
    for k in out_kernels:
        if not k.inplace:
            continue
        o = out_value(ins, k.signature)
        if o is None:
            continue
        out = program.values[o]
        if not isinstance(out, TensorValue) or out.is_constant:
            continue
        rule = RULES.get(k.inplace_rule or "elementwise")
        if rule is None:
            continue
        for pos in k.inplace:
            ok = rule(program, ins, pos, out)
            if ok is not None:
                found.append((k, ok))
    return found
