"""Four rows at a time in the smmlar GEMM's assembly (Cortex-M33, M4; ``quad_ok``): sub-blocks of 2 channels x 4 rows
(``quad_block``) over rows the caller widened ("pre") or the function widens into its frame (``widen_quad``), and
the "stem" mode's three overlapping windows of conv_stem_s2 (STEM_PERIOD apart) at a time. dsp_gemm_asm.gemm_asm_body
runs them before the two-row blocks."""
from __future__ import annotations

from mcu_gen.backends.generated.dsp_asm_common import Stream, clamp_asm, smmlar_asm
from mcu_gen.backends.generated.dsp_gemm_pairs import widen_groups


STEM_PERIOD = 36  # bytes per output pixel of conv_stem_s2's buffer (9 words): the "stem" mode's row stride
STEM_SHARED = 5  # its window's words m < 5 are the window before's words m + 9 (the next period's first 5)


def _stem_triple_macs(out: list, st: Stream, b: int, k: int, ca: int, cb: int):
    """The MACs of channels ca, cb (accumulators r4-r6 / r7-r9, from the starts in r4 / r7) over three of
    conv_stem_s2's windows at x (r12), 36 bytes apart, overlapping: window j's words m < STEM_SHARED are window
    j - 1's words m + 9. Such a word is loaded once for both: per m the four weight words (m and m + 9 of both
    channels: r0, r3, r10, r11) and the four windows' words (r2, lr) in 8 LDR, 12 SMLAD, 22 estimated M33 cycles
    (the "pre" mode's four rows: 16 cycles per 8 SMLAD); the other words (m 5..8) per m both weight words and
    three window words in a row, 6 SMLAD: 12 cycles."""
    w0 = 4 * b

    def w(c, m):  # the weight word of channel c and window word m (packed_weights: word 2g + h at 8bg + 8c + 4h)
        g, h = divmod(m, 2)
        return w0 + 8 * b * g + 8 * c + 4 * h

    def x(j, m):
        return STEM_PERIOD * j + 4 * m
    acc = {ca: (4, 5, 6), cb: (7, 8, 9)}
    for m in range(STEM_SHARED, k // 2 - STEM_SHARED):  # the words of window j only: the first from the starts
        st.ld("r0", w(ca, m))
        st.ld("r3", w(cb, m))
        out += [f"ldr r2, [r12, #{x(0, m)}]", f"ldr r10, [r12, #{x(1, m)}]", f"ldr r11, [r12, #{x(2, m)}]"]
        for j, xr in ((1, "r10"), (2, "r11"), (0, "r2")):
            for c, wr in ((ca, "r0"), (cb, "r3")):
                a, s0 = acc[c][j], acc[c][0]
                out.append(f"smlad r{a}, {xr}, {wr}, r{a if m > STEM_SHARED else s0}")
    for m in range(STEM_SHARED):  # the shared words: z_j = window j's word m = window j - 1's word m + 9
        st.ld("r0", w(ca, m))
        st.ld("r3", w(cb, m))
        st.ld("r10", w(ca, m + 9))
        st.ld("r11", w(cb, m + 9))
        for loads, macs in (((0, "r2"), (1, "lr")), [(0, "r2", m), (1, "lr", m), (0, "lr", m + 9)]), \
                           (((2, "r2"), (3, "lr")), [(2, "r2", m), (1, "r2", m + 9), (2, "lr", m + 9)]):
            out += [f"ldr {xr}, [r12, #{x(z, m)}]" for z, xr in loads]
            for j, xr, mw in macs:  # window j's word mw is z
                for c in (ca, cb):
                    wr = {(ca, m): "r0", (cb, m): "r3", (ca, m + 9): "r10", (cb, m + 9): "r11"}[(c, mw)]
                    out.append(f"smlad r{acc[c][j]}, {xr}, {wr}, r{acc[c][j]}")


def quad_block(b: int, k: int, n: int, act_min: int, act_max: int, rights, at: int | None = None,
                stem: bool = False, sign: bool = True) -> list:
    """One block of b (8 or 4) output channels of four rows in the "pre" mode (conv_stream_widened's pairs: rows 0, 1
    at x, rows 2, 3 at x + 4K; x in [sp]), in sub-blocks of 2 channels: r4-r7 channel 0's accumulators of rows 0-3,
    r8-r11 channel 1's, r0 / r3 the two weight words, r2 / lr input words, r12 x. Per 4 inputs and half (pairs A, then
    B) both weight words and rows 0, 1 in four LDR in a row (1 + 1 + 1 + 2 estimated M33 cycles), 4 SMLAD, rows 2, 3
    (1 + 2), 4 SMLAD: 16 cycles per 16 MACs, as the two-row block; but a channel's (mult, ra) and accumulator start
    are loaded once per four outputs, not two (about 1 cycle less per output: the 27-tap stems). Each shift an
    SSAT immediate (the layer's own function: ``rights``). ``at``: the four rows widened in the frame from [sp + at]
    (``widen_quad``: the same layout) instead of at x. ``stem``: three rows, conv_stem_s2's windows
    (``_stem_triple_macs``: r4-r6 channel 0's accumulators, r7-r9 channel 1's)."""
    out: list = []
    st = Stream(out)
    w0 = 4 * b
    base, off = ("r12", 0) if at is None else ("sp", at)
    c0 = 4 * b + 2 * b * k  # (mult, ra, right) of channel c at c0 + 12c
    for s in reversed(range(b // 2)):  # from the last sub-block, channel 0 last: its store moves y on by b
        ca, cb = 2 * s, 2 * s + 1
        st.ld("r4", 4 * ca)
        st.ld("r7" if stem else "r8", 4 * cb)
        if at is None and not (stem and s < b // 2 - 1):  # (stem: r12 is not a temporary, once a block)
            out.append("ldr r12, [sp]")
        if stem:
            _stem_triple_macs(out, st, b, k, ca, cb)
        for g in range(0 if stem else k // 4):
            for half in (0, 4):
                # rows 0, 1 a pair at x, rows 2, 3 at x + 4K
                xo = [off + 4 * k * (j // 2) + 16 * g + 2 * half + 4 * (j % 2) for j in range(4)]
                st.ld("r0", w0 + 8 * b * g + 8 * ca + half)
                st.ld("r3", w0 + 8 * b * g + 8 * cb + half)
                if g == 0 and half == 0:  # rows 1-3 start from row 0's accumulators (the starts) before row 0
                    out += [f"ldr r2, [{base}, #{xo[0]}]", f"ldr lr, [{base}, #{xo[1]}]",
                            "smlad r5, lr, r0, r4", "smlad r9, lr, r3, r8",
                            f"ldr lr, [{base}, #{xo[2]}]", "smlad r6, lr, r0, r4", "smlad r10, lr, r3, r8",
                            f"ldr lr, [{base}, #{xo[3]}]", "smlad r7, lr, r0, r4", "smlad r11, lr, r3, r8",
                            "smlad r4, r2, r0, r4", "smlad r8, r2, r3, r8"]
                    continue
                for j0, (a0, a1) in ((0, (4, 5)), (2, (6, 7))):  # rows 0, 1; rows 2, 3
                    out += [f"ldr r2, [{base}, #{xo[j0]}]", f"ldr lr, [{base}, #{xo[j0 + 1]}]",
                            f"smlad r{a0}, r2, r0, r{a0}", f"smlad r{a0 + 4}, r2, r3, r{a0 + 4}",
                            f"smlad r{a1}, lr, r0, r{a1}", f"smlad r{a1 + 4}, lr, r3, r{a1 + 4}"]
        out.append("ldr r2, [sp, #4]")
        stores: list = []
        for c, accs in ((cb, (7, 8, 9)), (ca, (4, 5, 6))) if stem else ((cb, (8, 9, 10, 11)), (ca, (4, 5, 6, 7))):
            st.ld("r0", c0 + 12 * c)
            st.ld("r3", c0 + 12 * c + 4)
            out += stores
            for a in accs:
                out += smmlar_asm(f"r{a}", "r0", "r3", "lr", sign)
                out += clamp_asm(f"r{a}", act_min, act_max, int(rights[c]))
            stores = [f"strb r{a}, [r2, #{j * n + c}]" for j, a in enumerate(accs)]
        if s == 0:
            stores = stores[1:] + [f"strb r4, [r2], #{b}"]
        out += stores
    st.to(c0 + 12 * b)
    out.append("str r2, [sp, #4]")
    return out


QUAD_FRAME_MAX_K = 32  # the four rows widened in the frame (8K bytes of stack) up to this K


def quad_ok(k: int, n: int, wide: str | None, rights) -> bool:
    """Whether the GEMM runs rows four at a time first (``quad_block``): the layer's own function (``rights``) with
    widened rows: "pre" (the caller's pairs), else widened into the frame (``widen_quad``, K <= QUAD_FRAME_MAX_K:
    at most 256 B more stack); the offsets in reach (8K, 5N as ADDW / SUBW immediates)."""
    return rights is not None and wide in ("pre", "stem", "frame", "arg") and 8 * k <= 4095 and 5 * n <= 4095 and \
        (wide in ("pre", "stem") or k <= QUAD_FRAME_MAX_K)


def widen_quad(k: int, at: int) -> list:
    """Rows x .. x + 3K ([sp]) widened into the frame from [sp + at] as two of conv_stream_widened's pairs (rows 0, 1,
    then rows 2, 3 at + 4K): per 4 inputs and pair 2 LDR, 4 SXTB16, 4 STR (``widen_groups``). r1 and r4-r11 are free
    here."""
    out = ["ldr r3, [sp]", f"add r1, sp, #{at}"]
    for pair in (0, 1):
        out += widen_groups("r3", 2 * k * pair, k, "r1", 4 * k * pair, k // 4)
    return out
