"""The smmlar GEMM in assembly for the DSP cores (Cortex-M33, M4): ``gemm_asm_body`` gives the instructions of
one generated GEMM function (rows in pairs with the inputs widened once or not, a last single row; the
requantization by SMMLAR), and the register-level pieces it and the depthwise row functions share
(``clamp_asm``, ``adjust``). tests/test_gemm_asm_emulated.py runs these instructions in an interpreter."""
from __future__ import annotations


# -- the smmlar GEMM in assembly (Cortex-M33/M4 with the DSP extension) ---------------------------
ACC8 = ["r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"]  # LDM-loadable: ascending


def clamp_asm(reg: str, act_min: int, act_max: int, right: int | None = None) -> list:
    """Saturation to int8 (after an arithmetic right shift by the immediate ``right``, when given), then
    the activation range."""
    out = [f"ssat {reg}, #8, {reg}" + (f", asr #{right}" if right is not None else "")]
    if act_min > -128:
        out += [f"cmp {reg}, #{act_min}", "it lt", f"movlt {reg}, #{act_min}"]
    if act_max < 127:
        out += [f"cmp {reg}, #{act_max}", "it gt", f"movgt {reg}, #{act_max}"]
    return out


def smmlar_asm(a: str, mult: str, ra: str, tmp: str, sign: bool = True) -> list:
    """a = SMMLAR a, mult, ra + (a >> 31): the smmlar requantization's multiply with its sign term in tmp, or
    without it (``sign`` False: under a fused ReLU, exactness.sign_free) straight from ra."""
    if not sign:
        return [f"smmlar {a}, {a}, {mult}, {ra}"]
    return [f"add {tmp}, {ra}, {a}, asr #31", f"smmlar {a}, {a}, {mult}, {tmp}"]


def _block_asm(b: int, k: int, act_min: int, act_max: int, sign: bool = True) -> list:
    """One block of b (8 or 4) output channels of one row; r0 = x row (reloaded), r1 = stream."""
    acc = ACC8[:b]
    out = ["ldr r0, [sp]", f"ldmia r1!, {{{acc[0]}-{acc[-1]}}}"]
    for _ in range(k // 4):
        out += ["ldr lr, [r0], #4", "sxtb16 r12, lr", "sxtb16 lr, lr, ror #8", f"ldrd r2, r3, [r1], #{8 * b}"]
        for c, a in enumerate(acc):
            if c:
                out.append(f"ldrd r2, r3, [r1, #{-8 * (b - c)}]")
            out += [f"smlad {a}, r12, r2, {a}", f"smlad {a}, lr, r3, {a}"]
    out.append("ldr r2, [sp, #4]")
    for a in acc:  # (mult, ra, right) -> r0, r3, r12
        out += ["ldmia r1!, {r0, r3, r12}"] + smmlar_asm(a, "r0", "r3", "r3", sign) + [f"asr {a}, {a}, r12"]
        out += clamp_asm(a, act_min, act_max) + [f"strb {a}, [r2], #1"]
    out.append("str r2, [sp, #4]")
    return out


def adjust(reg: str, delta: int) -> list:
    """reg += delta in ADDW/SUBW steps of at most 4095."""
    out = []
    while delta:
        step = max(-4095, min(4095, delta))
        out.append(f"{'addw' if step > 0 else 'subw'} {reg}, {reg}, #{abs(step)}")
        delta -= step
    return out


class Stream:
    """Addresses in the weight stream for the two-row block: r1 moves inside the block (ADDW/SUBW) only
    when an offset leaves LDR's immediate range; `pos` is r1's offset from the block's start."""

    def __init__(self, out: list):
        self.out, self.pos = out, 0

    def at(self, off: int) -> str:
        d = off - self.pos
        if d < -255 or d > 4095:
            self.out += adjust("r1", d)
            self.pos, d = off, 0
        return f"[r1, #{d}]"

    def ld(self, reg: str, off: int):
        """LDR reg from the block's byte offset off (after r1 moved, if it must)."""
        addr = self.at(off)
        self.out.append(f"ldr {reg}, {addr}")

    def to(self, off: int):
        self.out += adjust("r1", off - self.pos)
        self.pos = off


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
    16 bytes: ``_widen_rows``' layout). Each group's loads are issued between the previous group's stores, where
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


def _widen_rows(k: int, wide: str = "arg") -> list:
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
    """The MACs of one sub-block of 4 channels over both rows, inputs widened (``_widen_rows``). Row 1's
    accumulators start from row 0's (the starts) in their first SMLAD: no MOV. "frame" (widened in the frame,
    r12 free): per 4 inputs and half (pairs A, then B) the 4 channels' weight words in r0, r2, r3, r12 (four
    LDR in a row, pipelined with the row-0 input load: 1 + 1 + 1 + 1 + 2 estimated M33 cycles), 4 SMLAD of
    row 0, the row-1 input (2), 4 SMLAD of row 1. "arg" (the caller's buffer, r12 its base, reloaded per
    sub-block: the requantization takes r12): per 4 inputs and half both rows' input words (r0 row 0, r2 row
    1) and two channels' weight words (r3, lr) in four LDR in a row (1 + 1 + 1 + 2), 4 SMLAD, the other two
    channels' weights (1 + 2), 4 SMLAD. Both 32 cycles per 32 MACs (40 with the inputs widened in the loop).
    ``xoff(g, j, half)`` ("arg", "pre"): the byte offset from r12 of row j's word `half` of input group g where
    the rows are not ``_widen_rows``' layout (conv_cols' widened columns)."""
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


def _quad_block(b: int, k: int, n: int, act_min: int, act_max: int, rights, at: int | None = None,
                stem: bool = False, sign: bool = True) -> list:
    """One block of b (8 or 4) output channels of four rows in the "pre" mode (conv_stream_widened's pairs: rows 0, 1
    at x, rows 2, 3 at x + 4K; x in [sp]), in sub-blocks of 2 channels: r4-r7 channel 0's accumulators of rows 0-3,
    r8-r11 channel 1's, r0 / r3 the two weight words, r2 / lr input words, r12 x. Per 4 inputs and half (pairs A, then
    B) both weight words and rows 0, 1 in four LDR in a row (1 + 1 + 1 + 2 estimated M33 cycles), 4 SMLAD, rows 2, 3
    (1 + 2), 4 SMLAD: 16 cycles per 16 MACs, as the two-row block; but a channel's (mult, ra) and accumulator start
    are loaded once per four outputs, not two (about 1 cycle less per output: the 27-tap stems). Each shift an
    SSAT immediate (the layer's own function: ``rights``). ``at``: the four rows widened in the frame from [sp + at]
    (``_widen_quad``: the same layout) instead of at x. ``stem``: three rows, conv_stem_s2's windows
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
    """Whether the GEMM runs rows four at a time first (``_quad_block``): the layer's own function (``rights``) with
    widened rows: "pre" (the caller's pairs), else widened into the frame (``_widen_quad``, K <= QUAD_FRAME_MAX_K:
    at most 256 B more stack); the offsets in reach (8K, 5N as ADDW / SUBW immediates)."""
    return rights is not None and wide in ("pre", "stem", "frame", "arg") and 8 * k <= 4095 and 5 * n <= 4095 and \
        (wide in ("pre", "stem") or k <= QUAD_FRAME_MAX_K)


def _widen_quad(k: int, at: int) -> list:
    """Rows x .. x + 3K ([sp]) widened into the frame from [sp + at] as two of conv_stream_widened's pairs (rows 0, 1,
    then rows 2, 3 at + 4K): per 4 inputs and pair 2 LDR, 4 SXTB16, 4 STR (``widen_groups``). r1 and r4-r11 are free
    here."""
    out = ["ldr r3, [sp]", f"add r1, sp, #{at}"]
    for pair in (0, 1):
        out += widen_groups("r3", 2 * k * pair, k, "r1", 4 * k * pair, k // 4)
    return out


def gemm_asm_body(name: str, k: int, n: int, tail: bool, act_min: int, act_max: int, pairs: bool = True,
                  wide: str | None = None, rights=None, back: bool = False, pair_rows: bool = True,
                  sign: bool = True) -> list:
    """The instructions (and labels) of void name(const int8_t* x, const GemmDesc* d, int8_t* y, int32_t rows,
    int16_t* wide):
    the smmlar GEMM of gemm_stream_c<k, tail, act_min, act_max> for rows >= 0, K fully unrolled. Rows
    in pairs (``pair_block_asm``, when ``pair_ok``), then a last single row: registers r4-r11 the 8
    accumulators, r0 x, r1 the stream, r12/lr the activation pairs, r2/r3 a weight pair (during the
    requantization r0/r3/r12 the channel's constants and r2 y). Frame: [sp] x row, [sp+4] y,
    [sp+8] rows left, [sp+12] d->stream, [sp+16] d->end8. ``wide``: where the two rows of a pair are widened
    once (``_widen_rows``, ``_pair_macs_wide``): "arg" into the caller's buffer of 4K bytes (the fifth argument,
    kept at [sp+WIDE_PTR]: a scratch tensor in the arena), "frame" into the frame from [sp+WIDE_PTR]
    (``wide_ok``'s stack limit), None not at all. ``rights`` (the N right shifts of the layer whose own function
    this is, or None): the two-row blocks unrolled, each channel's shift an immediate of SSAT
    (``pair_requant``); the single row reads them from the stream as before. ``back`` (widened pairs only: an
    in-place 1x1 layer that widens, N > K, writing its outputs over its input, gemm_inplace_direct): the pairs from
    x, y backwards (the next pair 2K bytes before, its outputs 2N before); each pair is read whole (widened) before
    its outputs are written, which overwrite only the pair's and later rows' inputs. ``pair_rows`` False (with
    quads: the caller never passes 2 or 3 rows left over, gemm_inplace_direct of a multiple of 4 rows): no two-row
    code (flash)."""
    wide = wide if pairs and pair_ok(k, n) else None
    stem = wide == "stem"  # conv_stem_s2's windows (three rows at a time only: its calls are multiples of 3 rows)
    pre = wide in ("pre", "stem")
    quads = pairs and pair_ok(k, n) and quad_ok(k, n, wide, rights)
    assert not stem or (quads and not pair_rows)
    quad_at = None if pre or not quads else WIDE_PTR + (8 if wide == "arg" else 0)  # the four rows in the frame
    frame = WIDE_PTR + {"arg": 8, "frame": 4 * k}.get(wide, 0)  # 36 B pushed + the frame: 8-byte aligned
    if quad_at is not None:
        frame = max(frame, quad_at + 8 * k)
    body = ["push {r4-r11, lr}", f"sub sp, #{frame}", "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]",
            "ldr r12, [r1]", "ldr r1, [r1, #4]", "str r12, [sp, #12]", "str r1, [sp, #16]"]
    if wide == "arg":  # the fifth argument, on the caller's stack
        body += [f"ldr r12, [sp, #{frame + 36}]", f"str r12, [sp, #{WIDE_PTR}]"]
    if quads:  # four rows at a time (stem: three), then pairs; backwards: from the last four rows (x, y: the last
        # pair's)
        body += [f"cmp r3, #{3 if stem else 4}", "blt .Lpairs_%="]
        if back:
            body += ["ldm sp, {r0, r2}", f"subw r0, r0, #{2 * k}", f"subw r2, r2, #{2 * n}", "str r0, [sp]",
                     "str r2, [sp, #4]"]
        body += [".Lquad_%=:"] + (_widen_quad(k, quad_at) if quad_at is not None else []) + ["ldr r1, [sp, #12]"]
        for c in range(0, n - 3, 8):
            b = 8 if c + 8 <= n else 4
            body += _quad_block(b, k, n, act_min, act_max, rights[c:c + b], quad_at, stem, sign)
        step_x, step_y = (f"subw r0, r0, #{4 * k}", f"subw r2, r2, #{5 * n}") if back else \
            (f"addw r0, r0, #{3 * STEM_PERIOD}", f"addw r2, r2, #{2 * n}") if stem else \
            (f"addw r0, r0, #{(8 if pre else 4) * k}", f"addw r2, r2, #{3 * n}")  # r2: y + N after the blocks
        rows = 3 if stem else 4
        body += ["ldm sp, {r0, r2, r3}", step_x, step_y, f"subs r3, #{rows}",
                 "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]", f"cmp r3, #{rows}", "bge .Lquad_%="]
        if back:
            body += ["ldm sp, {r0, r2}", f"addw r0, r0, #{2 * k}", f"addw r2, r2, #{2 * n}", "str r0, [sp]",
                     "str r2, [sp, #4]"]
        body += [".Lpairs_%=:"]
    if pairs and pair_ok(k, n) and (pair_rows or not quads):  # N is the function's: its blocks of 8 are a loop only from two
        body += ["cmp r3, #2", "blt .Lsingle_%=", ".Lpair_%=:"]
        if wide and not pre:
            body += _widen_rows(k, wide)
        body.append("ldr r1, [sp, #12]")
        if rights is not None:
            for c in range(0, n - 7, 8):
                body += pair_block_asm(8, k, n, act_min, act_max, wide, rights[c:c + 8], sign=sign)
        elif n >= 8:
            body += pair_blocks8(k, n, act_min, act_max, wide, sign=sign)
        if tail:
            body += pair_block_asm(4, k, n, act_min, act_max, wide, None if rights is None else rights[n - 4:],
                                   sign=sign)
        assert not back or (wide and not pre)
        step_x, step_y = (f"subw r0, r0, #{2 * k}", f"subw r2, r2, #{3 * n}") if back else \
            (f"addw r0, r0, #{(4 if pre else 2) * k}", f"addw r2, r2, #{n}")  # r2: y + N after the blocks
        body += ["ldm sp, {r0, r2, r3}", step_x, step_y, "subs r3, #2", "str r0, [sp]", "str r2, [sp, #4]", "str r3, [sp, #8]", "cmp r3, #2", "bge .Lpair_%=",
                 ".Lsingle_%=:"]
    if pre:  # rows come in pairs only (conv_stream_widened): no single row
        body += [".Ldone_%=:", f"add sp, #{frame}", "pop {r4-r11, pc}"]
        return [l.replace("%=", name) for l in body]
    body += ["ldr r3, [sp, #8]", "cmp r3, #0", "beq .Ldone_%=",
             ".Lrow_%=:", "ldr r1, [sp, #12]", "ldr r3, [sp, #16]", "cmp r1, r3", "beq .Ltail_%=",
             ".Lblock_%=:"]
    body += _block_asm(8, k, act_min, act_max, sign)
    body += ["ldr r3, [sp, #16]", "cmp r1, r3", "bne .Lblock_%=", ".Ltail_%=:"]
    if tail:
        body += _block_asm(4, k, act_min, act_max, sign)
    body += ["ldr r0, [sp]", f"movw r3, #{k}", "add r0, r3", "str r0, [sp]", "ldr r3, [sp, #8]", "subs r3, #1",
             "str r3, [sp, #8]", "bne .Lrow_%=", ".Ldone_%=:", f"add sp, #{frame}", "pop {r4-r11, pc}"]
    return [l.replace("%=", name) for l in body]
