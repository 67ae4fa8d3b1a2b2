"""A 3x3 (any KH x KW) convolution of Cin % 4 == 0 on the two-row smmlar GEMM without gathered windows (issue 27):
``conv_cols`` (kernels_generated/dsp_cols.h) widens the input columns that a chunk of output pixels of one output
row reads straight from the input rows, once each, into int16 pairs (per window row, per input column, per 4
channels the words SXTB16 x and SXTB16 x, ROR #8); the GEMM (``gemm_cols_asm_body``) reads both windows of a pair
of pixels from those columns at fixed offsets: window j's tap (ky, kx) is column kx + j * stride of window row ky.
Against conv_stream + the widened pair of rows (widen_rows) this drops the int8 gather and widens each input
column once per chunk instead of once per window of a pair (stride 1, chunk of q pixels: q + 2 columns of 3 rows
against 2 * 3 * 3 per pair).

The buffer (``ColsWork``) takes the place of the layer's per-call buffers of dsp_work.layer_work, and never more
bytes than they were given: in the scratch tensor where the plan put them (the planner is offered larger levels
first, ``cols_levels``: it grants them only where the arena's free bytes at the layer's step hold them, so the
arena does not grow), else on the stack within the old buffers plus the old function's frame of widened rows, or
the stack a library kernel of the image takes anyway (``stack_room``: the stack bound does not grow)."""
from __future__ import annotations

from mcu_gen.backends.generated.dsp_gemm_pairs import WIDE_PTR, pair_block_asm, pair_blocks8
from mcu_gen.backends.generated.dsp_work import COLS_MAX_BYTES, cols_geometry_ok, cols_row_bytes, layer_work

class ColsWork:
    """A ``conv_cols`` layer's buffer: ``chunk`` output pixels per GEMM call (even), ``row_bytes`` per window row
    (the widened columns of a full chunk), ``bytes`` in all; ``offset`` in the scratch tensor, None: the stack."""

    def __init__(self, chunk: int, row_bytes: int, kh: int, offset: int | None):
        self.chunk, self.row_bytes, self.offset = chunk, row_bytes, offset
        self.bytes = kh * row_bytes


def cols_work(l) -> ColsWork | None:
    """The layer's conv_cols buffer, or None (conv_stream as before): the most pixels per call (an even count, at
    most the output width) whose columns fit the bytes of the layer's dsp_work buffers, where they are (the scratch
    tensor), or on the stack those plus the old GEMM's frame of widened rows, at least the layer's stack_room."""
    if getattr(l, "cols", False) is not False:
        return l.cols
    l.cols = None
    if cols_geometry_ok(l):
        work = layer_work(l)
        budget = work.bytes + (4 * l.k if work.wide == "frame" else 0)
        if work.offset is None:  # on the stack: up to what a library kernel of the image takes anyway (wide_ok)
            budget = max(budget, getattr(l, "stack_room", 0))
        ow, kh = l.geometry[10], l.geometry[3]
        best = None
        for chunk in range(2, ow + 1, 2):
            b = kh * cols_row_bytes(l, chunk)
            if b <= budget and b <= COLS_MAX_BYTES:
                best = chunk
        if best is not None:
            l.cols = ColsWork(best, cols_row_bytes(l, best), kh, work.offset)
    return l.cols


def _xoff(g: int, j: int, half: int, cin: int, kw: int, sw: int, row_bytes: int) -> int:
    """Byte offset of window j's (0, 1) half word (0: SXTB16 x, 4: ROR #8) of input group g (4 channels) in the
    buffer: g's tap (ky, kx) and channel group, window j's column kx + j * sw."""
    per_tap = cin // 4
    tap, cg = divmod(g, per_tap)
    ky, kx = divmod(tap, kw)
    return ky * row_bytes + (kx + j * sw) * cin * 2 + cg * 8 + half


def gemm_cols_asm_body(name: str, k: int, n: int, tail: bool, act_min: int, act_max: int, cin: int, kw: int,
                       sw: int, row_bytes: int, sign: bool = True) -> list:
    """The instructions of void name(const int8_t* cols, const GemmDesc* d, int8_t* y, int32_t pixels, int16_t*):
    the smmlar GEMM of gemm_stream_c<k, tail, act_min, act_max> for an even count of pixels >= 2 whose windows
    are read from conv_cols' widened columns (``_xoff``): pixels in pairs, the pair's columns 2 * sw * cin int16
    after the previous pair's. Frame as gemm_asm_body's: [sp] the pair's columns, [sp+4] y, [sp+8] pixels left,
    [sp+12] d->stream, [sp+16] d->end8. ``sign``: as gemm_asm_body's."""
    def xo(g, j, half):
        return _xoff(g, j, half, cin, kw, sw, row_bytes)

    frame = WIDE_PTR + 8  # 36 B pushed + the frame: 8-byte aligned
    body = ["push {r4-r11, lr}", f"sub sp, #{frame}", "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]",
            "ldr r12, [r1]", "ldr r1, [r1, #4]", "str r12, [sp, #12]", "str r1, [sp, #16]"]
    body += [".Lpair_%=:", "ldr r1, [sp, #12]"]
    if n >= 8:
        body += pair_blocks8(k, n, act_min, act_max, "pre", xo, sign)
    if tail:
        body += pair_block_asm(4, k, n, act_min, act_max, "pre", None, xo, sign)
    body += ["ldm sp, {r0, r2, r3}", f"addw r0, r0, #{4 * sw * cin}", f"addw r2, r2, #{n}", "subs r3, #2",
             "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]", "bne .Lpair_%=",
             f"add sp, #{frame}", "pop {r4-r11, pc}"]
    return [l.replace("%=", name) for l in body]


def cols_fn_name(l) -> str:
    """The GEMM function of a conv_cols layer: shared by the layers of one K, N, tail, output range and layout."""
    h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
    return (f"mcu_gen_gemm_cols_k{l.k}_n{l.n}{'_t4' if l.n % 8 == 4 else ''}_c{cin}_kw{kw}_s{sw}"
            f"_r{l.cols.row_bytes}_{'m' if l.act_min < 0 else ''}{abs(l.act_min)}_"
            f"{'m' if l.act_max < 0 else ''}{abs(l.act_max)}{'' if l.sign else '_relu'}")


def cols_fn_sig(l) -> tuple:
    h, w, cin, kh, kw, sh, sw, ph, pw, oh, ow = l.geometry
    return (l.k, l.n, l.n % 8 == 4, l.act_min, l.act_max, cin, kw, sw, l.cols.row_bytes, l.sign)
