"""mcu-gen's own int8 kernels for the Cortex-M55 (MVE / Helium), generated per layer (issue 17).

The MVE counterpart of mcu_gen/backends/generated/ (which writes the DSP kernels of the
Cortex-M33/M4). The layers are found by generated/match.py's matchers (same operators, same
conditions, same load-time checks), then written for MVE instead:

* 1x1 convolutions and fully connected layers: a register-blocked GEMM of 2 rows x 4 output
  channels whose inner loop is inline assembly — per 16 inputs 2 activation loads
  (``VLDRB.8``), 4 weight loads and 8 ``VMLADAVA.S8`` (16 MACs each, into 8 scalar
  accumulators): 14 instructions per 128 MACs, K fully unrolled, loads and MACs interleaved for
  the M55's beat overlap and, in fast mode, the requantization and stores in the same block
  (docs/generated_kernels.md, "Scheduled for the M55's cycles"). The weights are int8, reordered
  ahead of time into the order the loop reads them (per block of 4 output channels, per 16
  inputs, per channel 16 bytes; zero padded to whole blocks), so they cost 1x the covered
  weights in flash (the DSP kernels' pre-widened copy costs 2x). Row counts that are odd end
  with a 1x4 block, K not a multiple of 16 ends with a tail-predicated chunk (``VCTP.8``), N not
  a multiple of 4 with a predicated store.
* other convolutions (groups 1): the windows of two output pixels are gathered into a buffer
  (im2col; taps outside the input = the input zero point, the buffer zero padded to 16 bytes),
  then the same GEMM block runs over them.
* 3x3 depthwise: MVE across channels, 4 channels per vector (``VLDRB.S32`` of activations and
  weights, ``VMUL``, ``VADD``), padding folded into a per-border-class accumulator start as in
  the DSP kernel.
* elementwise adds (``cortex_m::quantized_add``, equal shapes): a tail-predicated loop of 4 lanes
  whose requantization sequence is proven exact per layer on every int8 pair (section at the end).
* requantization vectorized, 4 channels at a time (as CMSIS-NN's arm_requantize_s32x4):
  ``VQRDMULH`` and a rounding right shift (``VRSHL`` after a fix-up of negative values, so that
  ties round away from zero as arm_nn_requantize does). Modes per layer: ``fast`` (every shift a
  right shift of 1..31), ``vector`` (left shifts too: ``VSHL`` first, allowed only where the
  generator proved that the shifted accumulator fits 32 bits, as the reference shifts in 64) and
  ``scalar`` (otherwise: the library's requantize_to_int8 per value). All three are bit-exact
  with mcu_gen/reference/integer.py.

The runtime reaches them exactly as the DSP kernels: a prepare hook per operator that matches
the instruction (shapes, integer arguments, CRC-32 of each constant) and falls back to the
library kernel (CMSIS-NN or portable) otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcu_gen.backends.generated import emit_mve, exactness, hooks, match, mve_add
from mcu_gen.backends.generated import layers as dsp_layers
from mcu_gen.program.ir import Program
from mcu_gen.backends.render import set_places

GENERATED_FILE = dsp_layers.GENERATED_FILE
GENERATED_OPS = dsp_layers.GENERATED_OPS
PRELUDE = emit_mve.PRELUDE


def board_supports(board) -> bool:
    """MVE generated kernels: cores with the M-profile Vector Extension (Cortex-M55)."""
    return bool(getattr(board, "mve", False))


# -- layers ---------------------------------------------------------------------------------------
def _right_left(shifts):
    s = np.asarray(shifts, np.int64)
    return np.maximum(-s, 0), np.maximum(s, 0)


def requant_mode(mults, shifts, acc_bound) -> str:
    """'fast' (every shift a right shift of 1..31), 'vector' (VSHL first: the left-shifted
    accumulator provably fits 32 bits), else 'scalar' (requantize_to_int8 per value)."""
    m = np.asarray(mults, np.int64)
    s = np.asarray(shifts, np.int64)
    right, left = _right_left(s)
    if m.min() <= -2**31 or s.min() < -31 or s.max() > 31:
        return "scalar"
    if left.max() == 0 and right.min() >= 1:
        return "fast"
    bound = np.asarray(acc_bound, np.int64)
    ok = (left == 0) | ((np.minimum(bound, 2**31) << left) < 2**31)
    return "vector" if bool(np.all(ok)) else "scalar"


# Stack for a depthwise layer's ring of input rows where no scratch tensor holds it: the DSP planar rows' budget
# (dsp_depthwise_asm.DW_WINDOW_STACK_BYTES). It was 2,048 B: random networks' M55 images then took up to 704 B
# more stack than their library builds (bench/sweep_random_cnn.py --ram, seeds 16 and 19), against issue 25.
RING_STACK_BYTES = 528
RING_STACK_SMALL = 384  # a stack ring this small is taken over a scratch ring of only 4 channels
# Stack for a convolution's two gathered windows where its scratch tensor has no room (else one window at a time):
# the library image's deepest path without a quantized add is about 960 B (the portable in-place convolution's
# 552 B frame); a generated layer's path is about 500 B without its windows. Two windows of 704 B took a random
# network's image 384 B past its library build (seed 29); two of ResNet-8's K 576 (1,152 B) 64 B.
WINDOWS_STACK_BYTES = 448


def pass_sizes(l) -> list:
    """The channels per pass a depthwise layer's ring may hold, largest first: the multiples of 4 dividing C, or, for a
    channel count C not a multiple of 4, every multiple of 4 up to C rounded up (the pass of the rest takes what the
    others leave: kDwRest in mve_prelude.h)."""
    c4 = (l.c + 3) // 4 * 4
    return [g for g in range(c4, 3, -1) if g % 4 == 0 and (l.c % g == 0 or l.c % 4 != 0)]


def ring_plan(l) -> tuple | None:
    """(channels per pass kG, ring in the scratch tensor?) of a depthwise layer: the ring of kh (the kernel's rows;
    three for 3x3) padded rows takes kh * (W + 2 * pad) * kG bytes. In place, the variant's scratch (H * W bytes,
    planned in the arena) holds it where it fits; else the stack, at most RING_STACK_BYTES.
    The largest kG (a multiple of 4 dividing C) that fits; None if not even 4 channels fit.
    Where the scratch holds only 4 channels (and not all of them) and a stack ring of at most
    RING_STACK_SMALL bytes holds more: the stack. Every pass over the rows costs a ring fill and
    loop overhead per row (KWS's 25x5x64 layers: 16 passes of 4 channels vs 4 of 16 channels for
    336 bytes of stack: 1.28 M -> 1.24 M estimated cycles on the M55; the image's reserved stack
    is unchanged, its deepest call path is elsewhere).
    A channel count C not a multiple of 4 (depthwise3x3_part, kernels_generated/mve_dw_odd.h): any multiple of 4
    up to C rounded up to 4 (the last pass takes the rest), the largest that fits."""
    row = l.kh * (l.w + 2 * l.pad_w)  # the ring's bytes per channel
    c4 = (l.c + 3) // 4 * 4
    groups = pass_sizes(l)
    scratch = None
    if l.inplace_ok and l.scratch_bytes:
        scratch = next((g for g in groups if row * g <= l.scratch_bytes), None)
    if scratch is not None and (scratch > 4 or scratch == c4):
        return scratch, True
    small = next((g for g in groups if row * g <= RING_STACK_SMALL), None)
    if scratch is not None:
        return (small, False) if small is not None and small > scratch else (scratch, True)
    for g in groups:
        if row * g <= RING_STACK_BYTES:
            return g, False
    return None


def cols_plan(l) -> tuple | None:
    """(channels per pass kG, output pixels per chunk kM) of a depthwise layer over one input row with a kernel of one
    row (a Conv1d's) whose ring of the whole padded row fits neither the scratch nor RING_STACK_BYTES
    (depthwise_cols: a chunk's input columns, kCols = (kM - 1) * stride + kw of them, in RING_STACK_BYTES of stack):
    the most channels per pass that leave chunks of 16 pixels or more, else 4. None for other layers."""
    if l.h != 1 or l.kh != 1:
        return None
    groups = pass_sizes(l)
    g = next((g for g in groups if (15 * l.sw + l.kw) * g <= RING_STACK_BYTES), None)
    if g is None:
        g = 4
    m = (RING_STACK_BYTES // g - l.kw) // l.sw + 1
    return (g, min(m, l.ow)) if m >= 1 else None


def patch_bytes(l) -> int:
    """A convolution's two gathered windows (conv_patches' patch): 2 x K rounded up to whole chunks of 16."""
    return 2 * ((l.k + 15) // 16 * 16)


def patch_at(l) -> int:
    """Where a convolution's windows start in its scratch tensor: after the ring of an in-place layer
    (``scratch_at``), on a 16-byte boundary as the stack buffer's."""
    return (getattr(l, "scratch_at", 0) + 15) // 16 * 16


@dataclass
class MveLayer:
    """One generated MVE layer around the DSP matcher's layer object ``src``."""
    src: object
    mode: str
    ring: tuple | None = None  # depthwise: ring_plan()
    cols: int = 0  # depthwise over one wide row: output pixels per chunk (cols_plan; the ring holds a chunk's columns)

    def __getattr__(self, name):  # everything else: the matched layer's (name, kind, shapes, checks, ...)
        if name == "src":
            raise AttributeError(name)
        return getattr(self.src, name)

    @property
    def patch_offset(self) -> int | None:
        """A convolution's windows in its scratch tensor (sized by mcu_gen/plan/generated_scratch.py where the
        arena had room): their offset there, else None (the stack)."""
        if self.kind != "conv":
            return None
        at = getattr(self.src, "scratch_at", 0)
        return patch_at(self.src) if at + self.src.scratch_room >= patch_at(self.src) + patch_bytes(self.src) else None

    @property
    def patch_pairs(self) -> bool:
        """Whether a convolution gathers the windows of two pixels (the two-row GEMM) or of one: two in the scratch
        tensor, or on the stack up to WINDOWS_STACK_BYTES, else one (a random network's 3x3 88->88: two windows of
        800 bytes took its image's stack 448 B past the library build's)."""
        return self.patch_offset is not None or patch_bytes(self.src) <= WINDOWS_STACK_BYTES

    @property
    def right_shift_only(self):
        return self.mode == "fast"

    @property
    def weight_bytes(self) -> int:
        """Flash of the reordered int8 weight copy (the program keeps its own weights too)."""
        return int(self.packed_weights().size)

    @property
    def nk(self) -> int:
        return (self.src.k + 15) // 16 if self.kind != "depthwise" else 0

    def packed_weights(self) -> np.ndarray:
        if self.kind == "depthwise":  # per group of 4 channels (zero channels pad the last), per tap, its 4 weights
            c, c4 = self.src.c, (self.src.c + 3) // 4 * 4
            t = self.src.taps
            w = np.zeros((t, c4), np.int8)
            w[:, :c] = self.src.weights.astype(np.int8).reshape(t, c)
            w = w.reshape(t, c4 // 4, 4).transpose(1, 0, 2)
            return np.ascontiguousarray(w).reshape(-1)
        return pack_gemm_weights(self.src.weights)

    def depthwise_init(self) -> np.ndarray:
        """bias + input_offset * (sum of the kernel's weights) per channel: every tap counts, the taps
        outside the input read the zero point (x + input_offset = 0)."""
        s = self.src
        return exactness.wrap32(s.bias + s.in_offset * s.weights.astype(np.int64).sum(axis=0))


def pack_gemm_weights(w: np.ndarray) -> np.ndarray:
    """int8 [n, k] -> the GEMM's read order: per block of 4 output channels (zero channels pad
    the last block), per chunk of 16 inputs (zero inputs pad the last chunk), per channel of the
    block its 16 weights."""
    n, k = w.shape
    n4, nk = (n + 3) // 4, (k + 15) // 16
    p = np.zeros((n4 * 4, nk * 16), np.int8)
    p[:n, :k] = w
    return np.ascontiguousarray(p.reshape(n4, 4, nk, 16).transpose(0, 2, 1, 3)).reshape(-1)


@dataclass
class Generated(dsp_layers.Generated):
    def report(self) -> dict:
        r = super().report()
        for row, l in zip(r["layers"], self.layers):
            row["requant"] = l.mode
            row["reordered_weight_bytes"] = row.pop("prewidened_weight_bytes")
            row["isa"] = "mve"
        r["reordered_weight_bytes"] = r.pop("prewidened_weight_bytes")
        r["prewidened_weight_bytes"] = 0
        r["isa"] = "mve"
        return r


def covers(program: Program, idx: int, op: str) -> bool:
    """Whether the generator takes instruction ``idx`` if it were operator ``op`` (same arguments)."""
    return match.covers(program, idx, op, isa="mve")


def eligible(program: Program):
    """(layers, skipped): an MveLayer for each layer generated/match.py's matchers accept whose weights
    are int8 (a fully connected layer with a filter offset has int16 weights: skipped)."""
    layers, skipped = [], []
    base, skipped0 = match.eligible(program, isa="mve")
    skipped += skipped0
    for l in base:
        if l.kind == "add":  # its own section below
            r = add_layer(l)
            if isinstance(r, str):
                skipped.append((l.instruction, l.op, r))
            else:
                layers.append(r)
            continue
        w = np.asarray(l.weights, np.int64)
        if w.min() < -128 or w.max() > 127:
            skipped.append((l.instruction, l.op, "weights + filter offset outside int8"))
            continue
        if l.kind == "depthwise" and not -128 <= -l.in_offset <= 127:
            skipped.append((l.instruction, l.op, "input zero point outside int8 (padding reads it)"))
            continue
        ring = ring_plan(l) if l.kind == "depthwise" else None
        if l.kind == "depthwise" and ring is None and (cols := cols_plan(l)) is not None:
            layers.append(MveLayer(src=l, mode=requant_mode(l.mults, l.shifts, l.acc_bound()), ring=(cols[0], False),
                                   cols=cols[1]))
            continue
        if l.kind == "depthwise" and ring is None:
            rows = f"{l.kh} input row{'s' if l.kh > 1 else ''}"
            skipped.append((l.instruction, l.op, f"{l.c} channels: a ring of {rows} of 4 of them takes "
                            f"{4 * l.kh * (l.w + 2 * l.pad_w)} bytes (> {RING_STACK_BYTES} of stack)"))
            continue
        layers.append(MveLayer(src=l, mode=requant_mode(l.mults, l.shifts, l.acc_bound()), ring=ring))
    layers.sort(key=lambda l: l.instruction)
    return layers, skipped


def generate(program: Program, kernels, leave=None) -> Generated:
    """The generated MVE layers of this program and the C++ file that holds them (emit_mve.py).
    ``kernels``: the selected library kernels (their fn/prepare are the fallback of each generated prepare);
    ``leave``: {instruction: reason} left to them (generated/match.left_out)."""
    layers, skipped = match.left_out(*eligible(program), leave)
    g = Generated(layers=layers, skipped=skipped)
    if layers:
        set_places(program, [l.src for l in layers])
        g.source = emit_mve.source(layers, {k.op: k for k in kernels}, g)
    return g


hooked_kernels = hooks.hooked_kernels


# -- elementwise add (cortex_m::quantized_add, equal shapes): generated/mve_add.py ---------------
add_plan = mve_add.add_plan
add_reference = mve_add.add_reference
AddPlan = mve_add.AddPlan
REQUANT_VARIANTS = mve_add.REQUANT_VARIANTS


@dataclass
class MveAdd(MveLayer):
    """A generated MVE add layer (AddLayer ``src``) and its proven vector sequence."""
    plan: AddPlan = None

    @property
    def weight_bytes(self) -> int:
        return 0

    @property
    def nk(self) -> int:
        return 0


def add_layer(l) -> "MveAdd | str":
    plan = add_plan(l)
    return plan if isinstance(plan, str) else MveAdd(src=l, mode="vector", plan=plan)
