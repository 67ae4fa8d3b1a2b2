"""Where a generated DSP GEMM layer's per-call buffers go and how large they are (issue 25): the gathered
windows of a convolution, the output rows of an in-place 1x1 convolution and the two-row GEMM's widened rows,
either in the instruction's scratch tensor (sized by mcu_gen/plan/generated_scratch.py) or on the compute
function's stack with the stack limits. ``layer_work`` is what emit_dsp generates from."""
from __future__ import annotations

import numpy as np

from mcu_gen.backends.generated.dsp_gemm_pairs import pair_ok, wide_ok
from mcu_gen.backends.generated.dsp_gemm_quads import STEM_PERIOD
from mcu_gen.backends.generated.layers import PADDED_STACK_BYTES, POINTWISE_OPS


CONV_CHUNK_BYTES = 256  # gathered windows per GEMM call of a generated convolution (stack bytes)
INPLACE_CHUNK_BYTES = 256  # output rows of an in-place 1x1 convolution per GEMM call (stack bytes; at least 2 rows)
# Two windows (the two-row GEMM) on the stack up to this many bytes (or the image's GemmLayer.stack_room), else one
# at a time: every image of a convolution links the library kernel (the generated layer's fallback), whose deepest
# path below Executor::execute is 652 B (cortex_m_quantized_conv2d_out; 720 B in place row by row), a generated
# layer's 216 B without its buffers (M33, GCC 12). It was 1,152 B (ResNet-8's K 576, whose windows now go in the
# arena): a random network's 3x3 39->37 convolution (K 352, bench/sweep_random_cnn.py --seed 29) then took 280 B of
# stack past its library build.
CONV_PAIR_BYTES = 432
# A convolution's buffers on the stack (one window of K bytes where K > CONV_CHUNK_BYTES, the output rows of a narrow
# layer) at most this many bytes, or the image's stack_room, else the library kernel (emit_dsp
# .generate): its path below Executor::execute is 652 B, the generated layer's 236 B besides its buffers (conv_stream
# 128 B, the GEMM 64 B). Random seed 40 (`python bench/sweep_random_cnn.py --count 1 --seed 40 --boards mps2-an505
# --ram`): a 3x3 60->56 convolution at the arena's peak kept its window of 540 B on the stack, 64 B of RAM past its
# library build.
CONV_STACK_BYTES = 416
PRE_MAX_K = 36  # convolutions of K below this gather their windows widened (``pre_widened``: the 3-channel stems)
PRE_CHUNK_BYTES = (1152, 576)  # widened windows (2K bytes each) per GEMM call in the arena's scratch: the choices


class Work:
    """A smmlar layer's per-call buffers (issue 25: planned in the arena where the plan gave them room):
    ``chunk`` gathered windows (conv; a narrow convolution's ``chunk`` output rows of N after them: ``_unit``) or
    output rows (in-place 1x1, narrow 1x1 and fully connected) of ``unit`` bytes, then, where ``wide``,
    the GEMM's pair of rows widened once (4K bytes). ``offset``: where they start in the layer's scratch
    tensor (argument 12, after an in-place convolution's ring of rows), None: on the compute function's stack."""

    def __init__(self, chunk: int, unit: int, k: int, wide: str | None, offset: int | None):
        self.chunk, self.unit, self.wide, self.offset = chunk, unit, wide, offset  # wide: gemm_asm_body's
        self.wide_at = chunk * unit
        self.bytes = self.wide_at + (4 * k if wide == "arg" else 0)


def _conv_chunk(l, floor: int, up: bool) -> int:
    """The windows per GEMM call of a convolution: as many as CONV_CHUNK_BYTES hold, at least ``floor``; an even
    count where the two-row GEMM runs (``floor`` 2), so that no window of a chunk goes down the single-row path
    (1.35 estimated M33 cycles per MAC against 1.0-1.16): one window more (``up``: a buffer in the arena's scratch)
    or one less (on the stack, within CONV_CHUNK_BYTES). ResNet-8's / VWW's 27-tap stems: 9 -> 10 / 8."""
    oh, ow = l.geometry[9], l.geometry[10]
    c = max(floor, min(oh * ow, CONV_CHUNK_BYTES // _unit(l)))
    if floor == 2 and c % 2 and c < oh * ow:
        c += 1 if up else -1
    return c


def pre_widened(l) -> bool:
    """Whether a convolution gathers its windows already widened into int16 pairs (conv_stream_widened in
    kernels_generated/dsp_prelude.h, the GEMM's "pre" mode): small K (the 3-channel 3x3 stems, K 27 -> 28; 1x1
    shortcuts of stride 2), where copying a window's few bytes and widening them again in the GEMM (11 estimated
    cycles per 4 taps and pair of windows) cost more than the MACs' requantization. Each word of a window row is then
    one load and two SXTB16 (taps reordered: ``pre_order``)."""
    if l.kind != "conv" or l.k >= PRE_MAX_K or not pair_ok(l.k, l.n):
        return False
    oh, ow = l.geometry[9], l.geometry[10]
    return oh * ow >= 2


STEM_MAX_N = 32  # stem_s2 runs on the layer's own GEMM function (emit_dsp.OWN_FN_MAX_N): three rows at a time


def stem_s2(l) -> bool:
    """Whether a ``pre_widened`` convolution runs on conv_stem_s2 (kernels_generated/dsp_prelude.h, the GEMM's "stem"
    mode) instead of conv_stream_widened: 3x3, 3 input channels, stride 2 across (VWW's stem), output width a
    multiple of 3 (the GEMM's three rows at a time), left padding at most 1; each output pixel's window is 9 words
    of its own and 5 of the next pixel's, widened once (9 stores a pixel against 14)."""
    if not pre_widened(l) or l.n > STEM_MAX_N or l.n_out:
        return False
    _h, _w, cin, kh, kw, _sh, sw, _ph, pw, _oh, ow = l.geometry
    return cin == 3 and kh == 3 and kw == 3 and sw == 2 and pw <= 1 and l.k == 28 and ow % 3 == 0


def stem_chunk(l) -> int:
    """Output pixels per GEMM call of a ``stem_s2`` layer: the most (a multiple of 3, at most the output width) whose
    periods and the next pixel's (STEM_PERIOD bytes each) fit the bytes of its ``layer_work`` buffer."""
    ow = l.geometry[10]
    chunk = min(ow, (layer_work(l).bytes // STEM_PERIOD - 1) // 3 * 3)
    assert chunk >= 3, "the smallest buffer (stack_work's 4 windows) holds 3 periods and the next"
    return chunk


def _stem_order() -> list:
    """The taps of conv_stem_s2's 14 words (word m: taps (lo, hi)), as packed_weights pairs them (word 2g + h: taps
    4g + h and 4g + h + 2): tap (ky, kx, c) = 9 ky + 3 kx + c, 27 the zero tap."""
    def t(ky, kx, c):
        return 9 * ky + 3 * kx + c
    words = [(t(r, 0, 0), t(r, 0, 2)) for r in range(3)] + [(t(0, 0, 1), t(1, 0, 1)), (t(2, 0, 1), t(2, 1, 1))]
    words += [(t(r, 1, 0), t(r, 1, 2)) for r in range(3)] + [(t(0, 1, 1), t(1, 1, 1))]
    words += [(t(r, 2, 0), t(r, 2, 2)) for r in range(3)] + [(t(0, 2, 1), t(1, 2, 1)), (t(2, 2, 1), 27)]
    order = [0] * 28
    for m, (lo, hi) in enumerate(words):
        g, h = divmod(m, 2)
        order[4 * g + h], order[4 * g + h + 2] = lo, hi
    return order


def pre_order(l) -> np.ndarray:
    """The taps of a ``pre_widened`` convolution in the order conv_stream_widened writes them, as indices into the
    layer's (ky, kx, c) taps: per window row its whole words (4 * (kw * cin // 4) taps), then the last kw * cin % 4
    taps of every row, then the taps K has beyond kh * kw * cin (zero weights). A ``stem_s2`` layer: conv_stem_s2's
    (``_stem_order``)."""
    if stem_s2(l):
        return np.array(_stem_order(), np.int64)
    kh, kw, cin = l.geometry[3], l.geometry[4], l.geometry[2]
    span = kw * cin
    whole = span // 4 * 4
    order = [ky * span + t for ky in range(kh) for t in range(whole)]
    order += [ky * span + t for ky in range(kh) for t in range(whole, span)]
    order += list(range(kh * span, l.k))
    return np.array(order, np.int64)


def _pre_chunk(l, limit: int) -> int:
    """Widened windows (2K bytes each) per call of a ``pre_widened`` convolution within ``limit`` bytes: a multiple of
    4 (the own GEMM's four rows at a time), else even; at least 2, no more than its output pixels (rounded up)."""
    oh, ow = l.geometry[9], l.geometry[10]
    c = min(limit // _unit(l), (oh * ow + 1) // 2 * 2)
    return c // 4 * 4 if c >= 4 else max(2, c // 2 * 2)


def quads_only(l) -> bool:
    """Whether every call of the layer's GEMM has a multiple of 4 rows, or 1 (so that its own function, four rows at a
    time, needs no two-row code): an in-place 1x1 layer over its input (gemm_inplace_direct) whose paired rows are a
    multiple of 4, or a ``pre_widened`` convolution of an even pixel count whose chunk and last chunk are."""
    work = layer_work(l)
    if call_kind(l) == "inplace":
        return not work.chunk and l.rows // 2 * 2 % 4 == 0
    if work.wide == "stem":  # conv_stem_s2: runs of a multiple of 3 pixels (its own three-row code only)
        return True
    if work.wide == "pre":
        pixels = l.geometry[9] * l.geometry[10]
        return work.chunk % 4 == 0 and pixels % work.chunk % 4 == 0 and pixels % 2 == 0
    return False


def call_kind(l) -> str:
    """How the layer calls its GEMM: "conv" (gathered windows), "padded" (fully connected rows of K not a multiple of
    4 copied into a buffer of rows of K rounded up: gemm_stream_padded), "inplace" (1x1 over its own input), "narrow"
    (rows of N rounded up to 4 into a buffer, N of each copied out: match._narrow), "direct"."""
    if l.kind == "conv":
        return "conv"
    if getattr(l, "k_in", 0):
        return "padded"
    if getattr(l, "n_out", 0):
        return "narrow"
    return "inplace" if l.kind == "pointwise" and l.op != POINTWISE_OPS[0] else "direct"


def _unit(l) -> int:
    """Bytes per chunk entry: a window of K (conv; 2K widened; and its output row of N where N was rounded up to 4,
    after the chunk's windows: ``rows_at``), an output row of N (in-place 1x1, narrow), none (direct)."""
    call = call_kind(l)
    if call == "conv":
        return (2 * l.k if pre_widened(l) else l.k) + (l.n if l.n_out else 0)
    if call == "padded":  # the padded input row, then (N not a multiple of 4) the output row
        return l.k + (l.n if l.n_out else 0)
    return l.n if call in ("inplace", "narrow") else 0


def _inplace_chunk(l) -> int:
    """Output rows of an in-place 1x1 convolution per GEMM call: INPLACE_CHUNK_BYTES of them, an even count, at least 2
    (a narrow layer's: at most its rows)."""
    chunk = max(2, min(l.rows, INPLACE_CHUNK_BYTES // l.n // 2 * 2))
    return min(chunk, l.rows) if call_kind(l) == "narrow" else chunk


def _padded_chunk(l) -> int:
    """Rows per GEMM call of a "padded" fully connected layer: as many as PADDED_STACK_BYTES hold (match._linear
    refuses a row that does not fit), an even count where there are two or more."""
    c = max(1, min(l.rows, PADDED_STACK_BYTES // _unit(l)))
    return c // 2 * 2 if c >= 2 else c


def inplace_direct_ok(l) -> bool:
    """Whether an in-place 1x1 layer can have its GEMM write straight over its input (gemm_inplace_direct in
    kernels_generated/dsp_prelude.h: no row buffer, no copies, one call): pairs of rows widened (wide_ok: N >= 8)
    before their outputs are written, the pairs backwards where N > K (SUBW of 3N)."""
    return call_kind(l) == "inplace" and l.rows >= 2 and pair_ok(l.k, l.n) and l.n >= 8 and 3 * l.n <= 4095


def inplace_direct(l) -> bool:
    """Whether the layer's Work is gemm_inplace_direct's (an in-place layer with no rows per call)."""
    return call_kind(l) == "inplace" and not layer_work(l).chunk


def _pairs(l, chunk: int) -> bool:
    """Whether the GEMM calls with ``chunk`` entries run the two-row code."""
    return (chunk >= 2 if call_kind(l) in ("conv", "padded") else l.rows >= 2) and pair_ok(l.k, l.n)


def work_levels(l) -> list:
    """The (chunk, wide) choices of a smmlar layer whose buffers go in its scratch tensor, best first (estimated
    cycles: the widened rows save 8 of 40 cycles per 32 MACs, larger chunks a GEMM call per chunk): as many
    windows / rows as CONV_CHUNK_BYTES / INPLACE_CHUNK_BYTES hold (at least the two rows of the two-row GEMM),
    then two, each with the widened rows before without."""
    call = call_kind(l)
    if pre_widened(l):  # no widened rows besides the windows: (chunk, False), the most windows first
        sizes = [*PRE_CHUNK_BYTES, _pre_stack(l)]
        chunks = [_pre_chunk(l, b) for b in sizes]
        if stem_s2(l):  # first the bytes of a whole output row's periods (one GEMM call a row), in windows of 2K
            chunks.insert(0, -(-(l.geometry[10] + 1) * STEM_PERIOD // (2 * l.k)))
        return [(c, False) for c in dict.fromkeys([*chunks, 2])]
    if call == "conv":
        oh, ow = l.geometry[9], l.geometry[10]
        floor = 2 if oh * ow >= 2 and pair_ok(l.k, l.n) else 1
        chunks = [_conv_chunk(l, floor, True), floor]
        chunks = [c for c in cols_levels(l) if c > chunks[0]] + chunks
    elif call == "padded":
        chunks = [_padded_chunk(l)]
    elif call in ("inplace", "narrow"):
        chunks = [_inplace_chunk(l), min(2, l.rows)]
        if inplace_direct_ok(l) and wide_ok(l.k, l.n, on_stack=False):  # widened, straight over the input
            return [(0, True)] + [(c, False) for c in dict.fromkeys(chunks)]
    else:
        chunks = [0]
    out = []
    for wide in (True, False):
        for c in chunks:
            w = wide and _pairs(l, c) and wide_ok(l.k, l.n, on_stack=False)
            if (c, w) not in out and (c or w):
                out.append((c, w))
    return out


def work_bytes(l, chunk: int, wide: bool) -> int:
    return chunk * _unit(l) + (4 * l.k if wide else 0)


def _pre_stack(l) -> int:
    """Stack bytes of a ``pre_widened`` convolution's windows: what its gathered windows and widened rows took
    there before (CONV_CHUNK_BYTES and 4K), so that the stack bound does not grow."""
    return CONV_CHUNK_BYTES + 4 * l.k


def stack_work(l) -> Work:
    """The layer's buffers on its compute function's stack (as before issue 25's arena buffers):
    CONV_CHUNK_BYTES of windows (two where they fit CONV_PAIR_BYTES or the stack_room), INPLACE_CHUNK_BYTES of rows, the widened
    rows where the stack buffers and they stay within WIDE_STACK_BYTES (``wide_ok``)."""
    call, unit = call_kind(l), _unit(l)
    if pre_widened(l):
        return Work(_pre_chunk(l, _pre_stack(l)), unit, l.k, "stem" if stem_s2(l) else "pre", None)
    if call == "conv":
        oh, ow = l.geometry[9], l.geometry[10]
        floor = 2 if oh * ow >= 2 and pair_ok(l.k, l.n) and 2 * unit <= max(CONV_PAIR_BYTES, l.stack_room) else 1
        chunk = _conv_chunk(l, floor, False)
    else:
        chunk = _padded_chunk(l) if call == "padded" else _inplace_chunk(l) if call in ("inplace", "narrow") else 0
    wide = _pairs(l, chunk) and wide_ok(l.k, l.n, chunk * unit, stack_room=l.stack_room)
    if call == "padded":  # within the padded rows' stack budget too
        wide = wide and chunk * unit + 4 * l.k <= max(PADDED_STACK_BYTES, l.stack_room)
    if inplace_direct_ok(l) and wide_ok(l.k, l.n, 0, stack_room=l.stack_room) and \
            4 * l.k <= chunk * unit + (4 * l.k if wide else 0):  # no more stack than the rows took
        return Work(0, unit, l.k, "frame", None)
    return Work(chunk, unit, l.k, "frame" if wide else None, None)


def scratch_levels(l) -> list:
    """work_levels that do at least as well as the stack (stack_work: the widened rows first, then the larger
    chunk): the choices worth a scratch tensor's bytes (on a tie the arena's gap, not the stack's deepest path)."""
    s = stack_work(l)
    if pre_widened(l):
        return [(c, w) for c, w in work_levels(l) if c >= s.chunk]
    return [(c, w) for c, w in work_levels(l) if (w, c) >= (s.wide is not None, s.chunk)]


def stack_bytes(l) -> int:
    """The stack bytes of a generated convolution's windows (and narrow output rows): its Work where the plan gave its
    scratch no room, conv_patches' window (the requant_any path), 0 in the scratch tensor. (The GEMM's widened rows in
    its frame come only with windows of at most WIDE_STACK_BYTES together: wide_ok.)"""
    if l.requant_kind != "smmlar":
        return l.k + (l.n if l.n_out else 0)
    work = layer_work(l)
    return 0 if work.offset is not None else work.bytes


def work_plan(l) -> Work:
    """The layer's Work: the first of ``scratch_levels`` that its scratch tensor's room (``l.scratch_room``: its
    bytes after the ring of an in-place convolution, match.py) holds; else ``stack_work``."""
    room = getattr(l, "scratch_room", 0)
    for chunk, wide in scratch_levels(l):
        if 0 < work_bytes(l, chunk, wide) <= room:
            mode = ("stem" if stem_s2(l) else "pre") if pre_widened(l) else ("arg" if wide else None)
            return Work(chunk, _unit(l), l.k, mode, getattr(l, "scratch_at", 0))
    return stack_work(l)


def layer_work(l) -> Work:
    if getattr(l, "work", None) is None:
        l.work = work_plan(l)
    return l.work


def calls_pairs(l) -> bool:
    """Whether the layer calls its GEMM with two rows or more (else no two-row code: flash)."""
    if l.kind == "conv" or call_kind(l) == "padded":
        return layer_work(l).chunk >= 2
    return l.rows >= 2


# -- conv_cols (dsp_conv_cols.py): which layers run on widened input columns, and the scratch they are offered
COLS_MAX_BYTES = 4092  # every offset in the buffer within LDR's 12-bit immediate


def cols_geometry_ok(l) -> bool:
    """Whether a convolution layer can run on conv_cols: smmlar requantization, Cin % 4 == 0 (K = the taps: no
    padding of the windows), an even output width (pairs never straddle two output rows), the two-row GEMM's
    reach, at least 8 output channels."""
    if l.kind != "conv" or l.requant_kind != "smmlar" or not l.geometry or pre_widened(l):
        return False  # (a small-K layer whose windows are gathered widened stays on conv_stream_widened)
    h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
    return (cin % 4 == 0 and l.k == kh * kw * cin and ow % 2 == 0 and l.n >= 8 and pair_ok(l.k, l.n)
            and kh * kw > 1 and 1 <= sw <= kw and not l.n_out)


def cols_row_bytes(l, chunk: int) -> int:
    """Bytes of one window row's widened input columns for `chunk` output pixels (dsp_conv_cols)."""
    h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
    return ((chunk - 1) * sw + kw) * cin * 2


COLS_LEVEL_CHUNKS = (None, 16, 8)  # the larger conv_cols chunks offered to the planner (None: the output width)


def cols_levels(l) -> list:
    """For dsp_work.work_levels (the scratch the planner may give a layer, best first): per chunk of
    COLS_LEVEL_CHUNKS (below the output width, even) the windows whose bytes with the widened rows (the level's
    bytes, work_bytes) hold that chunk's widened columns; none where the layer does not run on conv_cols."""
    if not cols_geometry_ok(l):
        return []
    ow, kh, k = l.geometry[10], l.geometry[3], l.k
    out = []
    for q in COLS_LEVEL_CHUNKS:
        q = ow if q is None else q
        b = kh * cols_row_bytes(l, q)
        if q <= ow and q % 2 == 0 and b <= COLS_MAX_BYTES:
            c = max(1, -(-b // k) - 4)  # c * k + 4k >= b
            if c not in out:
                out.append(c)
    return out
