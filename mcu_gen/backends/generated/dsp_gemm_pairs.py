"""The two-row blocks of the smmlar GEMM in assembly (Cortex-M33, M4): rows r and r + 1 over sub-blocks of 4 output
channels (``pair_block_asm``; all the blocks of 8 of a row pair, looped from PAIR_LOOP_K: ``pair_blocks8``), with the
inputs widened in the loop, or once per row pair (``widen_rows``, ``wide_ok``: into the caller's buffer or the
frame), or by the caller ("pre": conv_stream_widened, dsp_conv_cols' windows); and their requantization
(``pair_requant``). dsp_gemm_asm.gemm_asm_body puts them together; tests/test_gemm_asm_emulated.py runs them."""
from __future__ import annotations

from mcu_gen.backends.generated.dsp_asm_common import Stream, adjust, clamp_asm, smmlar_asm


def pair_ok(k: int, n: int) -> bool:
    """The two-row block addresses both rows' inputs and outputs with 12-bit immediates."""
    return 2 * k <= 4092 and n + 8 <= 4095


PAIR_LOOP_K = 160  # from this K the sub-blocks of 4 channels are one loop (flash), below unrolled (cycles)


def _mac_pair(out: list, started: set, i: int, x0: str, x1: str, w: str) -> None:
    """SMLAD of weight word w into channel i's two accumulators (row 0 r{4+i} with x0, row 1 r{8+i} with
    x1). Only row 0's accumulator is loaded with the channel's start: the first pair of a channel
    starts row 1 from it (SMLAD's accumulate operand), so no MOV copies the starts."""
    a0, a1 = f"r{4 + i}", f"r{8 + i}"
    if i in started:
        out += [f"smlad {a0}, {x0}, {w}, {a0}", f"smlad {a1}, {x1}, {w}, {a1}"]
    else:
        started.add(i)
        out += [f"smlad {a1}, {x1}, {w}, {a0}", f"smlad {a0}, {x0}, {w}, {a0}"]


def _pair_macs(out: list, st, b: int, k: int, chans, based: bool = False) -> None:
    """The MACs of one sub-block of 4 channels over both rows: ``chans`` pairs (i, c), accumulators
    r{4+i} (row 0, holding the start) and r{8+i} (row 1), channel c's weights at stream offset
    w0 + 8bg + 8c (pair A), + 4 (pair B). Per 4 inputs the two rows' words (r0, r3) are widened once
    into A halves (r0, r3) and B halves (r2, lr); the B pairs first, the weight word in r12 (the first
    one loaded with the previous group's tail), then the A pairs, whose three free registers (r2, r12,
    lr) take three weight words in a row, then the last A pair beside the next group's x base, its first
    B word and its two input words: per 4 inputs 11 loads (17 estimated M33 cycles), 4 SXTB16, 16 SMLAD
    (37 cycles for 32 MACs)."""
    groups = k // 4
    w0 = 4 * b  # the first weight word
    started: set = set()

    def wa(g: int, c: int) -> int:
        return w0 + 8 * b * g + 8 * c

    (i0, c0), (i1, c1), (i2, c2), (i3, c3) = chans
    out += ([] if based else macs_base(None)) + ["ldr r0, [lr]", f"ldr r3, [lr, #{k}]"]
    st.ld("r12", wa(0, c0) + 4)
    for g in range(groups):
        out += ["sxtb16 r2, r0, ror #8", "sxtb16 lr, r3, ror #8", "sxtb16 r0, r0", "sxtb16 r3, r3"]
        for j, (i, c) in enumerate(chans):  # the B pairs: x in r2 / lr, the weight word in r12
            if j:
                st.ld("r12", wa(g, c) + 4)
            _mac_pair(out, started, i, "r2", "lr", "r12")
        st.ld("r2", wa(g, c0))  # the A pairs: x in r0 / r3
        st.ld("r12", wa(g, c1))
        st.ld("lr", wa(g, c2))
        _mac_pair(out, started, i0, "r0", "r3", "r2")
        _mac_pair(out, started, i1, "r0", "r3", "r12")
        _mac_pair(out, started, i2, "r0", "r3", "lr")
        st.ld("r2", wa(g, c3))
        if g + 1 < groups:  # the next group's x base, first B word, then (after the last A pair) its words
            out.append("ldr lr, [sp]")
            st.ld("r12", wa(g + 1, c0) + 4)
            _mac_pair(out, started, i3, "r0", "r3", "r2")
            out += [f"ldr r0, [lr, #{4 * (g + 1)}]", f"ldr r3, [lr, #{k + 4 * (g + 1)}]"]
        else:
            _mac_pair(out, started, i3, "r0", "r3", "r2")


WIDE_PTR = 28  # frame offset of the pointer to the widened input rows (the function's fifth argument)
WIDE_MAX_BYTES = 4092  # the widened rows (4K bytes) in reach of LDR's 12-bit offsets from their base (K <= 1023)
WIDE_STACK_BYTES = 576  # a wide GEMM's caller's row buffer plus its widened rows on the stack, at most (see wide_ok)


def wide_ok(k: int, n: int, caller_bytes: int = 0, on_stack: bool = True, stack_room: int = 0) -> bool:
    """Whether the two-row GEMM widens its two input rows once (``_pair_macs_wide``) into the 4K-byte buffer its
    caller passes: from two sub-blocks of 4 channels (the widening, 11 estimated M33 cycles per 4 inputs, costs
    more than the 8 it saves per sub-block below) and K <= WIDE_MAX_BYTES / 4. A buffer in the layer's scratch
    tensor (``on_stack`` False: planned in the arena, counted by the planner) has no other limit. On the stack
    the layer's buffers there (``caller_bytes``: gathered windows, in-place output rows, none) plus the 4K bytes
    stay within WIDE_STACK_BYTES, so that the generated layer stays inside the stack the library kernels of the
    image already need (issue 25: the default build's RAM no more than the library build's), or within
    ``stack_room`` where a library kernel of the image takes that much stack anyway (GemmLayer.stack_room: the
    quantized add's table, ResNet-8's in-place 3x3 convolution of K 144: 288 + 576 B)."""
    fits = caller_bytes + 4 * k <= max(WIDE_STACK_BYTES, stack_room) if on_stack else True
    return n >= 8 and 4 * k <= WIDE_MAX_BYTES and fits


def widen_groups(src: str, so: int, k: int, dst: str, do: int, count: int) -> list:
    """``count`` groups of 4 inputs of the two rows [src + so] and [src + so + k] widened to [dst + do] (per group
    16 bytes: ``widen_rows``' layout). Each group's loads are issued between the previous group's stores, where
    they pipeline (1 + 1 estimated M33 cycles, not 1 + 2 before the SXTB16s): 10 cycles per group, the first 11;
    the last group loads nothing beyond its own words."""
    out = [f"ldr r0, [{src}, #{so}]", f"ldr r12, [{src}, #{so + k}]"]
    for g in range(count):
        at = do + 16 * g
        out += ["sxtb16 r2, r0, ror #8", "sxtb16 r0, r0", "sxtb16 lr, r12, ror #8", "sxtb16 r12, r12",
                f"str r0, [{dst}, #{at}]", f"str r12, [{dst}, #{at + 4}]"]
        if g + 1 < count:
            out += [f"ldr r0, [{src}, #{so + 4 * (g + 1)}]", f"ldr r12, [{src}, #{so + 4 * (g + 1) + k}]"]
        out += [f"str r2, [{dst}, #{at + 8}]", f"str lr, [{dst}, #{at + 12}]"]
    return out


def widen_rows(k: int, wide: str = "arg") -> list:
    """Both rows' words, x and x + k, widened once per row pair: ``wide`` "arg" into the caller's buffer (the
    pointer at [sp + WIDE_PTR]), "frame" into the function's frame from [sp + WIDE_PTR]; per 4 inputs at 16g the
    halfword pairs x0 (bytes 0, 2), x1 (0, 2), x0 (1, 3), x1 (1, 3) (SXTB16, SXTB16 ROR 8). Above 16 groups a
    loop of u groups whose first load and first store post-increment the pointers (4 estimated M33 cycles per
    iteration for the loop, not 6; 32-bit encodings for the negative offsets: about 40 B more).
    r1 and r4-r11 are free here (no accumulator lives across row pairs; r1 is reloaded after)."""
    groups = k // 4

    out = ["ldr r3, [sp]", f"ldr r1, [sp, #{WIDE_PTR}]" if wide == "arg" else f"add r1, sp, #{WIDE_PTR}"]
    if groups <= 16:
        return out + widen_groups("r3", 0, k, "r1", 0, groups)
    u = next(u for u in (8, 4, 2, 1) if groups % u == 0)  # (no load beyond the pair: the last group prefetches none)
    # the first load and the first store post-increment r3 and r1 (no ADDS): the others' offsets from there
    body = widen_groups("r3", -4 * u, k, "r1", -16 * u, u)
    assert body[0] == f"ldr r0, [r3, #{-4 * u}]" and body[6] == f"str r0, [r1, #{-16 * u}]"
    body[0], body[6] = f"ldr r0, [r3], #{4 * u}", f"str r0, [r1], #{16 * u}"
    return out + [f"addw r4, r1, #{16 * groups}", ".Lwide_%=:"] + body + ["cmp r1, r4", "bne .Lwide_%="]


def macs_base(wide: str | None) -> list:
    """The load of the x base register of a sub-block's MACs (``_pair_macs``: lr = x; ``_pair_macs_wide``: r12 =
    the widened rows, none in the "frame" mode). The blocks issue it before the accumulator starts (``based``): it
    pipelines with their loads (1 estimated M33 cycle, not 2 before the MACs' first load from it)."""
    if wide is None:
        return ["ldr lr, [sp]"]
    return {"arg": [f"ldr r12, [sp, #{WIDE_PTR}]"], "pre": ["ldr r12, [sp]"]}.get(wide, [])


def _pair_macs_wide(out: list, st, b: int, k: int, chans, wide: str = "arg", based: bool = False,
                    xoff=None) -> None:
    """The MACs of one sub-block of 4 channels over both rows, inputs widened (``widen_rows``). Row 1's
    accumulators start from row 0's (the starts) in their first SMLAD: no MOV. "frame" (widened in the frame,
    r12 free): per 4 inputs and half (pairs A, then B) the 4 channels' weight words in r0, r2, r3, r12 (four
    LDR in a row, pipelined with the row-0 input load: 1 + 1 + 1 + 1 + 2 estimated M33 cycles), 4 SMLAD of
    row 0, the row-1 input (2), 4 SMLAD of row 1. "arg" (the caller's buffer, r12 its base, reloaded per
    sub-block: the requantization takes r12): per 4 inputs and half both rows' input words (r0 row 0, r2 row
    1) and two channels' weight words (r3, lr) in four LDR in a row (1 + 1 + 1 + 2), 4 SMLAD, the other two
    channels' weights (1 + 2), 4 SMLAD. Both 32 cycles per 32 MACs (40 with the inputs widened in the loop).
    ``xoff(g, j, half)`` ("arg", "pre"): the byte offset from r12 of row j's word `half` of input group g where
    the rows are not ``widen_rows``' layout (conv_cols' widened columns)."""
    wregs = ("r0", "r2", "r3", "r12")
    w0 = 4 * b  # the first weight word
    base, at = ("sp", WIDE_PTR) if wide == "frame" else ("r12", 0)
    if not based:  # "pre": the caller widened the pair, x ([sp]) points at it
        out += macs_base(wide)
    for g in range(k // 4):
        for half in (0, 4):
            xo = at + 16 * g + 2 * half
            first = g == 0 and half == 0  # row 1 first: it starts from row 0's accumulator (the start, no MOV)
            if wide == "frame":  # four weight registers (r12 is free): pipelined with the row-0 input load
                for i, c in chans:
                    st.ld(wregs[i], w0 + 8 * b * g + 8 * c + half)
                rows = ((xo + 4, 8), (xo, 4)) if first else ((xo, 4), (xo + 4, 8))
                for x_off, acc in rows:
                    out.append(f"ldr lr, [sp, #{x_off}]")
                    src = 4 if first else acc
                    out += [f"smlad r{acc + i}, lr, {wregs[i]}, r{src + i}" for i, _ in chans]
                continue
            x0, x1 = (xo, xo + 4) if xoff is None else (xoff(g, 0, half), xoff(g, 1, half))
            out += [f"ldr r0, [{base}, #{x0}]", f"ldr r2, [{base}, #{x1}]"]
            _pair_group_macs(out, st, chans, lambda c: w0 + 8 * b * g + 8 * c + half, first)


def _pair_group_macs(out: list, st, chans, w_at, first: bool) -> None:
    """One group of 2 inputs for a sub-block of 4 channels (chans: (i, c) pairs) over two rows whose input words
    are in r0 (row 0) and r2 (row 1): per two channels their weight words (r3, lr, at stream offset w_at(c)), then
    4 SMLAD. In the first group (``first``) row 1's accumulators start from row 0's (the starts: no MOV)."""
    for pair in (chans[:2], chans[2:]):
        for reg, (i, c) in zip(("r3", "lr"), pair):
            st.ld(reg, w_at(c))
        for reg, (i, c) in zip(("r3", "lr"), pair):
            if first:
                out += [f"smlad r{8 + i}, r2, {reg}, r{4 + i}", f"smlad r{4 + i}, r0, {reg}, r{4 + i}"]
            else:
                out += [f"smlad r{4 + i}, r0, {reg}, r{4 + i}", f"smlad r{8 + i}, r2, {reg}, r{8 + i}"]


def pair_requant(out: list, st, c0: int, n: int, chans, act_min: int, act_max: int, rights=None,
                 step: int | None = None, sign: bool = True) -> None:
    """Requantizes and stores one sub-block's two rows: channel c's (mult, ra, right) at stream offset
    c0 + 12c, its bytes at [r2 + c] (row 0) and [r2 + n + c] (row 1). A channel's stores follow the
    next channel's loads (the last load pipelines with them: 1 estimated cycle, not 2). With ``rights``
    (channel c's right shift: the function is the layer's own) the shift is SSAT's immediate: no load
    of right, no ASR. ``step``: the last channel is channel 0 of y, whose row-0 store post-increments r2 by
    step (the block's y advance without an ADDS)."""
    stores: list = []
    for i, c in chans:
        for j, r in enumerate(("r0", "r3") if rights is not None else ("r0", "r3", "r12")):
            st.ld(r, c0 + 12 * c + 4 * j)
        out += stores
        for a in (f"r{4 + i}", f"r{8 + i}"):
            out += smmlar_asm(a, "r0", "r3", "lr", sign)
            if rights is None:
                out += [f"asr {a}, {a}, r12"] + clamp_asm(a, act_min, act_max)
            else:
                out += clamp_asm(a, act_min, act_max, int(rights[c]))
        stores = [f"strb r{4 + i}, [r2, #{c}]", f"strb r{8 + i}, [r2, #{n + c}]"]
    if step is not None:
        assert c == 0
        stores = [stores[1], f"strb r{4 + i}, [r2], #{step}"]
    out += stores


def _pair_block_unrolled(b: int, k: int, n: int, act_min: int, act_max: int, wide: bool = False,
                         rights=None, xoff=None, sign: bool = True) -> list:
    """One block of b (8 or 4) output channels of two rows, x and x + k, in sub-blocks of 4 channels:
    r4-r7 row 0's accumulators, r8-r11 row 1's; per 4 inputs both rows' words are loaded once
    ([sp] holds x: reloaded into r0) and widened (r0/r2 row 0, r3/r12 row 1), and each weight pair
    word (lr, one LDR) feeds two SMLADs, one per row: per 4 inputs and 4 channels 8 + 2 LDR (+1 for x),
    4 SXTB16, 16 SMLAD (32 MACs), against 8 LDRD for 32 MACs of one row. The stream's layout is the
    one-row block's; r1 moves through the block with the real offsets and ends at the next block. The
    sub-blocks from the last, channel 0 requantized last: its store moves y on to the next block."""
    out: list = []
    st = Stream(out)
    c0 = 4 * b + 2 * b * k  # (mult, ra, right) of channel c at c0 + 12c
    for s in reversed(range(b // 4)):
        chans = list(enumerate(range(4 * s, 4 * s + 4)))
        out += macs_base(wide)  # before the starts: pipelined with them
        for i, c in chans:
            st.ld(f"r{4 + i}", 4 * c)  # row 1's accumulators start from these in the first MACs
        _pair_macs_wide(out, st, b, k, chans, wide, True, xoff) if wide else _pair_macs(out, st, b, k, chans, True)
        out.append("ldr r2, [sp, #4]")
        if s:
            pair_requant(out, st, c0, n, chans, act_min, act_max, rights, sign=sign)
        else:
            pair_requant(out, st, c0, n, chans[::-1], act_min, act_max, rights, b, sign)
    st.to(c0 + 12 * b)
    out.append("str r2, [sp, #4]")
    return out


def pair_block_asm(b: int, k: int, n: int, act_min: int, act_max: int, wide: bool = False, rights=None,
                   xoff=None, sign: bool = True) -> list:
    """One block of b (8 or 4) output channels of two rows, its sub-blocks of 4 channels unrolled
    (``_pair_block_unrolled``; ``xoff``: see ``_pair_macs_wide``, dsp_conv_cols' windows). r1 ends at the next
    block, [sp+4] (y) advanced by b. The blocks of 8 of a row pair: ``pair_blocks8``."""
    return _pair_block_unrolled(b, k, n, act_min, act_max, wide, rights, xoff, sign)


def pair_blocks8(k: int, n: int, act_min: int, act_max: int, wide=None, xoff=None, sign: bool = True) -> list:
    """All the blocks of 8 channels of a row pair (n >= 8; r1 the first block's start, ends at the last block's
    end; [sp+4] y, advanced by 8 per block; [sp+16] end8). Below PAIR_LOOP_K a loop over ``pair_block_asm``'s
    unrolled block (the loop's end8 load before the block's y store, where it pipelines); from it the two
    sub-blocks of 4 channels share one copy of their MACs (``_pair_blocks8_looped``: flash)."""
    if k >= PAIR_LOOP_K:
        return _pair_blocks8_looped(k, n, act_min, act_max, wide, xoff, sign)
    block = pair_block_asm(8, k, n, act_min, act_max, wide, None, xoff, sign)
    if n < 16:
        return block
    assert block[-1] == "str r2, [sp, #4]"
    return [".Lpblock_%=:"] + block[:-1] + ["ldr r3, [sp, #16]", "str r2, [sp, #4]", "cmp r1, r3",
                                            "bne .Lpblock_%="]


def _reach(st: Stream, lo: int, hi: int, then: int | None = None) -> list:
    """The ADDW / SUBW that let LDR reach stream offsets lo..hi from r1 (none when it does), r1 left where the
    fewest instructions get it there and, when ``then`` is given, on to ``then`` after."""
    reach = range(hi - 4095, lo + 256)
    options = [st.pos] if st.pos in reach else [min(max(st.pos, reach[0]), reach[-1])]
    if then is not None and then in reach:
        options.append(then)
    cost = [len(adjust("r1", p - st.pos)) + (len(adjust("r1", then - p)) if then is not None else 0) for p in options]
    p = options[cost.index(min(cost))]
    moves = adjust("r1", p - st.pos)
    st.pos = p
    return moves


def _pair_blocks8_looped(k: int, n: int, act_min: int, act_max: int, wide=None, xoff=None, sign: bool = True) -> list:
    """The blocks of 8 channels of a row pair for K >= PAIR_LOOP_K: per block the MACs of sub-block s (4 channels,
    weights 32s bytes after sub-block 0's in the stream) are one copy, entered with r1 = block + 32s; the
    accumulator starts before them (sub-block s's at block + 16s) and the requantization after them (constants
    at block + 48s + c0, outputs at y + 4s) are each sub-block's own code, with s in their immediates: no offset
    kept in the frame or added at run time. Which sub-block the MACs belong to is the carry flag, which they leave
    alone (LDR, SXTB16, SMLAD, ADDW / SUBW): the flag-setting ADDS / SUBS that moves r1 to sub-block 1's weights
    sets it one way (``up``: ADDS, C = 0), the compares before sub-block 0 (one per row pair, and the block loop's:
    r1 below end8) the other. Layout: [sub-block 1's requantization, the block's end] [sub-block 0's starts]
    [MACs; BCC / BCS to the first part] [sub-block 0's requantization, sub-block 1's starts; B to the MACs]: per
    block 3 taken branches (the loop's own included) and 2 not taken; r1 moved between the parts by the fewest
    ADDW / SUBW (``_reach``)."""
    b = 8
    c0 = 4 * b + 2 * b * k  # (mult, ra, right) of channel c at c0 + 12c from the block's start
    chans0, chans1 = [(c, c) for c in range(4)], [(c, 4 + c) for c in range(4)]

    macs: list = []
    st = Stream(macs)  # offsets from the sub-block's weights: r1 = block + 32s
    if wide:
        _pair_macs_wide(macs, st, b, k, chans0, wide, True, xoff)
    else:
        _pair_macs(macs, st, b, k, chans0)
    pos_m = st.pos

    def starts(out: list, st: Stream, at: int):  # the x base first: pipelined with the starts
        out += macs_base(wide) if wide else []
        for c in range(4):
            st.ld(f"r{4 + c}", at + 4 * c)

    # sub-block 0's requantization (r1 = block + pos_m): r1 moved before the y load (no address stall)
    st0 = Stream([])
    st0.pos = pos_m
    mid = _reach(st0, c0, c0 + 44) + ["ldr r2, [sp, #4]"]
    st0.out = mid
    pair_requant(mid, st0, c0, n, chans0, act_min, act_max, sign=sign)
    # sub-block 1's starts (block + 16), then r1 to block + 32 by one ADDS (C = 0) or SUBS (C = 1) of 1..255,
    # any ADDW / SUBW before the last two stores
    up = st0.pos < 33
    target = min(st0.pos, 31) if up else min(st0.pos, 271)
    stores = mid[-2:]
    del mid[-2:]
    mid += adjust("r1", target - st0.pos) + stores
    st0.pos = target
    starts(mid, st0, 16)
    mid += [f"adds r1, #{32 - target}" if up else f"subs r1, #{target - 32}", "b .Lsub8_%="]
    st0.pos = 32
    # sub-block 1's requantization (r1 = block + 32 + pos_m), then the block's end (r1 to the next block: c0 + 64)
    st1 = Stream([])
    st1.pos = pos_m
    end = [".Lsub8e_%=:"] + _reach(st1, c0 + 16, c0 + 60, c0 + 64) + ["ldr r2, [sp, #4]"]
    st1.out = end
    pair_requant(end, st1, c0 - 32, n, chans1, act_min, act_max, sign=sign)  # channel 4 + c at c0 + 48 + 12c - 32
    end += adjust("r1", c0 + 64 - st1.pos)
    loop_cmp = "cmp r3, r1" if up else "cmp r1, r3"  # r1 < end8: C = 1 (CMP end8, r1) or 0 (CMP r1, end8)
    end += ["adds r2, #8", "ldr r3, [sp, #16]", "str r2, [sp, #4]", loop_cmp, "beq .Lpdone_%="]
    # sub-block 0's starts (r1 = block)
    first: list = [".Lpblock_%=:"]
    starts(first, Stream(first), 0)
    entry = ["cmp r1, #0" if up else "cmn r1, #0", "b .Lpblock_%="]  # C = 1 / C = 0 for sub-block 0
    branch = "bcc .Lsub8e_%=" if up else "bcs .Lsub8e_%="
    return entry + end + first + [".Lsub8_%=:"] + macs + [branch] + mid + [".Lpdone_%=:"]
