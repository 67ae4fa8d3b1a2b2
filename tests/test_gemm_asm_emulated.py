"""The smmlar GEMM's assembly (dsp_gemm_asm.gemm_asm_body) run by a small Thumb-2 interpreter of the
instructions it uses, against gemm_stream_c's arithmetic in Python: every path (two-row blocks with the
inputs widened in the frame, in the caller's buffer (the fifth argument: a scratch tensor) or not, sub-blocks unrolled or looped, the last block of 4, the last
single row, clamped output ranges) on random streams, in milliseconds and without QEMU (the QEMU runs of
tests/test_generated_firmware.py check the same code on the M33 and the M4). Reads outside the inputs,
the stream, the descriptor and the frame, and writes outside the outputs and the frame, fail; the
interpreter also estimates the M33 cycles with mcu_gen/device/cycles.py's model (a load is 1 cycle when
an independent load/store single follows, else 2; LDRD 3; LDM/PUSH 1 + N; a taken branch 1 + 2; + 1 for a
load/store whose address register the data-processing instruction just before wrote)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mcu_gen.backends.generated.dsp_gemm_asm import gemm_asm_body
from mcu_gen.backends.generated.dsp_gemm_pairs import PAIR_LOOP_K, WIDE_PTR, pair_ok
from mcu_gen.backends.generated.dsp_gemm_quads import STEM_PERIOD

M32 = 0xFFFFFFFF
SP_TOP, X0, D0, STREAM0, Y0, WIDE0 = 0x10000, 0x20000, 0x30000, 0x40000, 0x80000, 0xC0000


def s32(v: int) -> int:
    v &= M32
    return v - (1 << 32) if v & 0x80000000 else v


def sxtb16(v: int, ror: int) -> int:
    v = ((v & M32) >> ror | (v & M32) << (32 - ror)) & M32 if ror else v & M32
    lo, hi = v & 0xFF, (v >> 16) & 0xFF
    lo, hi = lo - 256 if lo & 0x80 else lo, hi - 256 if hi & 0x80 else hi
    return (lo & 0xFFFF) | (hi & 0xFFFF) << 16


def halves(v: int):
    lo, hi = v & 0xFFFF, (v >> 16) & 0xFFFF
    return (lo - 65536 if lo & 0x8000 else lo), (hi - 65536 if hi & 0x8000 else hi)


def smlad(n: int, m: int, a: int) -> int:
    (n0, n1), (m0, m1) = halves(n), halves(m)
    return s32(n0 * m0 + n1 * m1 + s32(a))


def smmlar(n: int, m: int, a: int) -> int:
    return s32((s32(a) * (1 << 32) + s32(n) * s32(m) + (1 << 31)) >> 32)


def ssat8(v: int) -> int:
    return max(-128, min(127, s32(v)))


class Machine:
    """The registers, flags and memory (readable / writable byte ranges) of one call."""

    def __init__(self, mem: bytearray, readable, writable):
        self.r = {f"r{i}": 0 for i in range(13)}
        self.r.update(sp=SP_TOP, lr=0xDEAD)
        self.mem, self.readable, self.writable = mem, readable, writable
        self.n = self.z = self.c = self.v = False
        self.cycles = 0
        self.profile = None  # {body index: executions}, when a dict

    def reg(self, name: str) -> int:
        return self.r[name]

    def set(self, name: str, v: int):
        self.r[name] = v & M32

    def check(self, addr: int, size: int, ranges, what: str):
        assert any(lo <= addr and addr + size <= hi for lo, hi in ranges), f"{what} of {size} at {addr:#x}"

    def load(self, addr: int, size: int = 4) -> int:
        self.check(addr, size, self.readable + self.writable, "read")
        return int.from_bytes(self.mem[addr:addr + size], "little")

    def store(self, addr: int, v: int, size: int = 4):
        self.check(addr, size, self.writable, "write")
        self.mem[addr:addr + size] = (v & ((1 << 8 * size) - 1)).to_bytes(size, "little")


def _imm(t: str) -> int:
    return int(t.strip().lstrip("#"), 0)


def _reglist(t: str) -> list:
    out = []
    for part in t.strip("{} ").split(","):
        part = part.strip()
        if "-" in part:
            a, b = (int(p.strip()[1:]) for p in part.split("-"))
            out += [f"r{i}" for i in range(a, b + 1)]
        else:
            out.append(part)
    return out


MEM_RE = re.compile(r"(\w+), \[(\w+)(?:, #(-?\d+))?\](!?)(?:, #(-?\d+))?$")


def _mem_operands(ops: str):
    m = MEM_RE.match(ops)
    assert m, ops
    rt, rn, off, _, post = m.groups()
    return rt, rn, int(off or 0), (int(post) if post is not None else None)


def run(body: list, m: Machine, args: tuple) -> None:
    for r, v in zip(("r0", "r1", "r2", "r3"), args):
        m.set(r, v)
    lines = [l for l in body]
    labels = {l[:-1]: i for i, l in enumerate(lines) if l.endswith(":")}
    pc, skip, steps = 0, False, 0
    wrote = None  # the register the instruction before wrote, when a data-processing one (address stalls)
    while True:
        steps += 1
        assert steps < 5_000_000
        line = lines[pc]
        pc += 1
        if line.endswith(":"):
            continue
        op, _, ops = line.partition(" ")
        nxt = next((l for l in lines[pc:] if not l.endswith(":")), "")
        if op == "it":
            cond = ops.strip()
            skip = not ({"lt": m.n != m.v, "gt": not m.z and m.n == m.v}[cond])
            m.cycles += 1
            continue
        if skip:
            skip = False
            m.cycles += 1
            continue
        m.cycles += 1
        if m.profile is not None:
            m.profile[pc - 1] = m.profile.get(pc - 1, 0) + 1
        if op in ("ldr", "ldrb", "str", "strb", "ldrd", "ldmia", "ldm"):  # its address register just written: +1
            rn = ops.split(", ", 1)[0].rstrip("!") if op in ("ldmia", "ldm") else \
                _mem_operands(ops.split(", ", 1)[1] if op == "ldrd" else ops)[1]
            m.cycles += rn == wrote
        wrote = None
        if op in ("ldr", "ldrb"):
            rt, rn, off, post = _mem_operands(ops)
            base = m.reg(rn)
            addr = base + off if post is None else base
            m.set(rt, m.load(addr & M32, 4 if op == "ldr" else 1))
            if post is not None:
                m.set(rn, base + post)
            nop, _, nops = nxt.partition(" ")
            if nop in ("ldr", "ldrb", "str", "strb"):
                _, nrn, _, _ = _mem_operands(nops)
                if nrn == rt:
                    m.cycles += 1
            else:
                m.cycles += 1
        elif op in ("str", "strb"):
            rt, rn, off, post = _mem_operands(ops)
            base = m.reg(rn)
            addr = base + off if post is None else base
            m.store(addr & M32, m.reg(rt), 4 if op == "str" else 1)
            if post is not None:
                m.set(rn, base + post)
        elif op == "ldrd":
            a, rest = ops.split(", ", 1)
            rt2, rn, off, post = _mem_operands(rest)
            base = m.reg(rn)
            addr = base + off if post is None else base
            m.set(a, m.load(addr & M32))
            m.set(rt2, m.load((addr + 4) & M32))
            if post is not None:
                m.set(rn, base + post)
            m.cycles += 2
        elif op in ("ldmia", "ldm"):
            rn, regs = ops.split(", ", 1)
            wb = rn.endswith("!")
            rn = rn.rstrip("!")
            addr = m.reg(rn)
            for i, r in enumerate(_reglist(regs)):
                m.set(r, m.load(addr + 4 * i))
            if wb:
                m.set(rn, addr + 4 * len(_reglist(regs)))
            m.cycles += len(_reglist(regs))
        elif op == "push":
            regs = _reglist(ops)
            m.set("sp", m.reg("sp") - 4 * len(regs))
            for i, r in enumerate(regs):
                m.store(m.reg("sp") + 4 * i, m.reg(r))
            m.cycles += len(regs)
        elif op == "pop":
            regs = _reglist(ops)
            assert regs[-1] == "pc"
            for i, r in enumerate(regs[:-1]):
                m.set(r, m.load(m.reg("sp") + 4 * i))
            m.set("sp", m.reg("sp") + 4 * len(regs))
            m.cycles += len(regs) + 2
            return
        elif op in ("b", "beq", "bne", "blt", "bge", "bcc", "bcs"):
            take = {"b": True, "beq": m.z, "bne": not m.z, "blt": m.n != m.v, "bge": m.n == m.v, "bcc": not m.c,
                    "bcs": m.c}[op]
            if take:
                pc = labels[ops.strip()]
                m.cycles += 2
        else:
            t = [x.strip() for x in ops.split(",")]
            wrote = None if op in ("cmp", "cmn") else t[0]
            if op == "smlad":
                m.set(t[0], smlad(m.reg(t[1]), m.reg(t[2]), m.reg(t[3])))
            elif op == "smmlar":
                m.set(t[0], smmlar(m.reg(t[1]), m.reg(t[2]), m.reg(t[3])))
            elif op == "sxtb16":
                m.set(t[0], sxtb16(m.reg(t[1]), _imm(t[2].split()[1]) if len(t) > 2 else 0))
            elif op == "asr":
                m.set(t[0], s32(m.reg(t[1])) >> (m.reg(t[2]) & 0xFF))
            elif op == "ssat":  # ssat rd, #8, rn[, asr #s]
                assert t[1] == "#8"
                v = s32(m.reg(t[2]))
                if len(t) == 4:
                    kind, sh = t[3].split()
                    assert kind == "asr"
                    v >>= _imm(sh)
                m.set(t[0], ssat8(v))
            elif op in ("mov", "movw", "movs", "movlt", "movgt"):
                m.set(t[0], _imm(t[1]) if t[1].startswith("#") else m.reg(t[1]))
            elif op in ("cmp", "cmn", "subs", "adds"):
                a = m.reg(t[0])
                b = _imm(t[1]) if t[1].startswith("#") else m.reg(t[1])
                r = a + b if op in ("adds", "cmn") else a - b
                res = s32(r)
                m.n, m.z = res < 0, res == 0
                if op in ("adds", "cmn"):
                    m.v = (s32(a) >= 0) == (s32(b) >= 0) and (res >= 0) != (s32(a) >= 0)
                    m.c = (a & M32) + (b & M32) > M32
                else:
                    m.v = (s32(a) >= 0) != (s32(b) >= 0) and (res >= 0) != (s32(a) >= 0)
                    m.c = (a & M32) >= (b & M32)  # no borrow
                if op not in ("cmp", "cmn"):
                    m.set(t[0], r)
            elif op in ("add", "sub", "addw", "subw"):
                sign = -1 if op.startswith("sub") else 1
                if len(t) == 2:
                    d, a = t[0], m.reg(t[0])
                    b = _imm(t[1]) if t[1].startswith("#") else m.reg(t[1])
                else:
                    d, a = t[0], m.reg(t[1])
                    if len(t) == 4:  # add rd, rn, rm, asr/lsr #s
                        kind, s = t[3].split()
                        v = m.reg(t[2])
                        b = s32(v) >> _imm(s) if kind == "asr" else v >> _imm(s)
                    else:
                        b = _imm(t[2]) if t[2].startswith("#") else m.reg(t[2])
                m.set(d, a + sign * b)
            else:
                raise AssertionError(f"not interpreted: {line}")


def expected(x: np.ndarray, words: list, end8: int, k: int, n: int, tail: bool, act_min: int,
             act_max: int) -> np.ndarray:
    """gemm_stream_c (kernels_generated/dsp_prelude.h) in Python integers."""
    out = []
    for row in x:
        p, ys = 0, []
        blocks = [8] * (end8 // (8 + 4 * k + 24)) + ([4] if tail else [])
        for b in blocks:
            a = [s32(words[p + c]) for c in range(b)]
            p += b
            for g in range(0, k, 4):
                v = [int(t) for t in row[g:g + 4]]
                x02 = (v[0] & 0xFFFF) | (v[2] & 0xFFFF) << 16
                x13 = (v[1] & 0xFFFF) | (v[3] & 0xFFFF) << 16
                for c in range(b):
                    a[c] = smlad(x13, words[p + 2 * c + 1], smlad(x02, words[p + 2 * c], a[c]))
                p += 2 * b
            for c in range(b):
                mult, ra, right = (s32(w) for w in words[p + 3 * c:p + 3 * c + 3])
                r = s32(smmlar(a[c], mult, s32(ra + (a[c] >> 31)))) >> right
                ys.append(min(max(ssat8(r), act_min), act_max))
            p += 3 * b
        out.append(ys)
    return np.array(out, np.int64).reshape(len(x), n)


def random_stream(rng, k: int, n: int):
    """(words, end8) of a GemmLayer.stream()-shaped stream: per block starts, int16 weight pairs (doubled
    weights + offsets: kept small), (mult, ra, right) per channel with a rounding constant and offset."""
    words = []
    c = 0
    end8 = None
    while c < n:
        b = 8 if n - c >= 8 else 4
        if b == 4:
            end8 = len(words)
        words += [int(v) & M32 for v in rng.integers(-4000, 4000, b)]
        w = rng.integers(-300, 300, (k // 4, b, 2, 2))
        for g in range(k // 4):
            for ch in range(b):
                for pair in range(2):
                    words.append((int(w[g, ch, pair, 0]) & 0xFFFF) | (int(w[g, ch, pair, 1]) & 0xFFFF) << 16)
        for _ in range(b):
            right = int(rng.integers(6, 14))
            off = int(rng.integers(-20, 20))
            words += [int(rng.integers(1 << 29, 1 << 31)), ((1 << (right - 1)) + off * (1 << right)) & M32, right]
        c += b
    return words, len(words) if end8 is None else end8


def call(body: list, x: np.ndarray, words: list, end8: int, n: int):
    """Runs the function on rows x (int8) with the stream; (outputs, estimated cycles). The fifth argument (at
    the caller's sp) points at a buffer of 4K bytes, the only memory besides the frame and the outputs that
    the function may write (the widened rows of the "arg" mode)."""
    rows, k = x.shape
    mem = bytearray(WIDE0 + 4 * k + 64)
    mem[X0:X0 + x.size] = x.astype(np.int8).tobytes()
    for i, w in enumerate(words):
        mem[STREAM0 + 4 * i:STREAM0 + 4 * i + 4] = (w & M32).to_bytes(4, "little")
    mem[D0:D0 + 4] = STREAM0.to_bytes(4, "little")
    mem[D0 + 4:D0 + 8] = (STREAM0 + 4 * end8).to_bytes(4, "little")
    mem[Y0:Y0 + rows * n] = b"\x55" * (rows * n)
    mem[SP_TOP:SP_TOP + 4] = WIDE0.to_bytes(4, "little")
    m = Machine(mem, readable=[(X0, X0 + x.size), (D0, D0 + 8), (STREAM0, STREAM0 + 4 * len(words)),
                               (SP_TOP, SP_TOP + 4)],
                writable=[(SP_TOP - 8192, SP_TOP), (Y0, Y0 + rows * n), (WIDE0, WIDE0 + 4 * k)])
    run(body, m, (X0, D0, Y0, rows))
    assert m.reg("sp") == SP_TOP
    y = np.frombuffer(bytes(mem[Y0:Y0 + rows * n]), np.int8).astype(np.int64).reshape(rows, n)
    return y, m.cycles


CASES = [  # (k, n, rows, act_min, act_max, pairs, wide[, own: the layer's own function, shifts as immediates])
    (8, 16, 5, -128, 127, True, True),     # VWW's K 8 layer: widened rows
    (8, 16, 4, -128, 127, True, False),
    (12, 12, 3, 0, 127, True, True),       # K 12, a last block of 4, ReLU
    (16, 32, 2, -128, 127, True, True),
    (16, 20, 3, -128, 127, True, False),
    (28, 8, 9, -128, 127, True, True),     # the 3x3 stems (27 taps -> 28), VWW's chunk of 9 windows
    (28, 16, 3, -20, 90, True, False),
    (4, 4, 3, -128, 127, True, True),      # only a block of 4
    (4, 12, 2, -128, 127, True, False),
    (64, 8, 1, -128, 127, True, True),     # a single row
    (108, 12, 4, -128, 127, True, False),  # without widened rows, unrolled sub-blocks, a tail
    (132, 36, 3, 0, 6, True, False),       # unrolled sub-blocks (K < PAIR_LOOP_K), ReLU6 range
    (164, 36, 3, 0, 6, True, False),       # looped sub-blocks (K >= PAIR_LOOP_K), ReLU6 range
    (144, 16, 2, -128, 127, True, False),  # ResNet-8's body (unrolled sub-blocks)
    (128, 24, 3, -128, 127, True, True),   # unrolled sub-blocks over widened rows
    (160, 24, 3, -128, 127, True, True),   # looped sub-blocks over widened rows
    (72, 16, 3, -128, 127, True, True),    # the widening loop by 2 groups (18), by 1 (21): no load beyond the pair
    (84, 8, 2, -128, 127, True, True),
    (324, 20, 3, -128, 127, True, False),  # the stream pointer moves inside a block (offsets > 4095)
    (576, 8, 2, -128, 127, True, False),
    (40, 12, 3, -128, 127, False, False),  # one row at a time only
    (16, 8, 0, -128, 127, True, True),     # no rows
    (8, 16, 5, -128, 127, True, True, True),    # the layer's own function (emit_dsp._own_rights)
    (28, 8, 9, 0, 127, True, True, True),
    (12, 12, 3, -128, 127, True, False, True),
    (32, 32, 4, -7, 100, True, True, True),
    (108, 20, 2, -128, 127, True, False, True),
]


RUNS = [(c, mode) for c in CASES for mode in (("frame", "arg") if c[6] else (None,))]


@pytest.mark.parametrize("case,mode", RUNS, ids=["-".join(map(str, c)) + f"-{m}" for c, m in RUNS])
def test_gemm_asm_equals_gemm_stream_c(case, mode):
    k, n, rows, act_min, act_max, pairs, wide, *own = case
    rng = np.random.default_rng(k * 1000 + n * 10 + rows)
    tail = n % 8 == 4
    wide = mode if pairs and pair_ok(k, n) else None
    words, end8 = random_stream(rng, k, n)
    rights = None
    if own:  # each channel's right shift, the third word of its constants
        b8 = 8 + 4 * k + 24
        rights = [words[i * b8 + 8 + 4 * k + 3 * c + 2] for i in range(n // 8) for c in range(8)]
        if tail:
            rights += [words[end8 + 4 + 2 * k + 3 * c + 2] for c in range(4)]
    body = gemm_asm_body("f", k, n, tail, act_min, act_max, pairs, wide, rights)
    if own:
        assert not any(l.startswith("asr") for l in body[:body.index(".Lsingle_f:")])
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    y, cycles = call(body, x, words, end8, n)
    want = expected(x, words, end8, k, n, tail, act_min, act_max)
    assert np.array_equal(y, want), (y, want)
    if rows * n >= 8:
        assert len(np.unique(y)) > 4  # not all saturated


# Under a fused ReLU (act_min at or above every channel's output offset: random_stream's lie in -20..19) the
# assembly leaves out the sign term (exactness.sign_free): one ADD an output less, the same outputs as the
# reference's form. Cases: pairs, a tail, looped sub-blocks, widened rows, the single row, the own function
# (four rows at a time), ReLU6-like ranges.
RELU_CASES = [(28, 8, 9, True, "arg", True), (12, 12, 3, True, None, False), (164, 36, 3, True, None, False),
              (128, 24, 3, True, "arg", False), (40, 12, 3, False, None, False), (64, 8, 1, True, None, False),
              (8, 16, 9, True, "frame", True), (32, 32, 4, True, "arg", True), (108, 20, 2, True, None, True)]


@pytest.mark.parametrize("case", RELU_CASES, ids=["-".join(map(str, c)) for c in RELU_CASES])
@pytest.mark.parametrize("act_max", [127, 90])
def test_gemm_asm_without_the_sign_term_under_relu(case, act_max):
    k, n, rows, pairs, wide, own = case
    rng = np.random.default_rng(k * 1000 + n * 10 + rows + act_max)
    tail = n % 8 == 4
    wide = wide if pairs and pair_ok(k, n) else None
    words, end8 = random_stream(rng, k, n)
    rights = None
    if own:
        b8 = 8 + 4 * k + 24
        rights = [words[i * b8 + 8 + 4 * k + 3 * c + 2] for i in range(n // 8) for c in range(8)]
        if tail:
            rights += [words[end8 + 4 + 2 * k + 3 * c + 2] for c in range(4)]
    body = gemm_asm_body("f", k, n, tail, 20, act_max, pairs, wide, rights, sign=False)
    assert not any("asr #31" in l for l in body)
    with_sign = gemm_asm_body("f", k, n, tail, 20, act_max, pairs, wide, rights)
    assert len(with_sign) - len(body) >= n  # at least one ADD an output channel's code
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    y, cycles = call(body, x, words, end8, n)
    want = expected(x, words, end8, k, n, tail, 20, act_max)
    assert np.array_equal(y, want), (y, want)
    assert (want == 20).any() and ((want > 20) & (want < act_max)).any()  # clamped outputs, and ones in range
    if rows:
        _, cycles_sign = call(with_sign, x, words, end8, n)
        assert cycles_sign - cycles >= rows * n  # one cycle an output at least


def test_two_row_blocks_cost_what_the_generator_says():
    """Estimated M33 cycles per MAC of the two-row GEMM's inner loops (K 256, N 64, 2 rows): about 37/32
    without widened rows, 32/32 with (plus the widening), the requantization on top."""
    rng = np.random.default_rng(1)
    k, n = 256, 64
    words, end8 = random_stream(rng, k, n)
    x = rng.integers(-128, 128, (2, k)).astype(np.int8)
    per_mac = {}
    for wide in (None, "frame", "arg"):
        _, cycles = call(gemm_asm_body("f", k, n, False, -128, 127, True, wide), x, words, end8, n)
        per_mac[wide] = cycles / (2 * k * n)
    assert per_mac[None] < 1.22 and per_mac["frame"] < 1.08 and per_mac["arg"] < 1.08, per_mac
    assert k >= PAIR_LOOP_K and WIDE_PTR == 28


@pytest.mark.parametrize("k,n,rows,bound", [(128, 128, 36, 9.25), (256, 256, 8, 9.9)])
def test_shared_pointwise_overhead_per_output(k, n, rows, bound):
    """Estimated M33 cycles above one per MAC per output of the shared two-row GEMM over the caller's widened rows
    (VWW's K 128, N 128 pointwise layers, 36 rows; its K 256 layer, whose sub-blocks share their MACs: K >=
    PAIR_LOOP_K): the requantization (5 per output + the channel's 3 constants per 2 outputs), the sub-block's
    starts with the x base pipelined, the widening at 10 cycles per 4 inputs and pair, the block loop."""
    assert (k >= PAIR_LOOP_K) == (k == 256)
    rng = np.random.default_rng(3)
    words, end8 = random_stream(rng, k, n)
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    body = gemm_asm_body("f", k, n, False, -128, 127, True, "arg")
    y, cycles = call(body, x, words, end8, n)
    assert np.array_equal(y, expected(x, words, end8, k, n, False, -128, 127))
    over = (cycles - rows * k * n) / (rows * n)
    # K 128: 9.21 (9.30 with the block's y advanced by an ADDS and ADDS in the widening loop, 9.70 before the base
    # load moved and the widening pipelined); K 256: 9.83 (12.41 with the sub-blocks' offsets in the frame, added
    # at run time)
    assert over < bound, over


def widen_pairs(x: np.ndarray) -> bytes:
    """Rows x (int8, an even count) as conv_stream_widened lays out pairs of windows for the GEMM's "pre" mode: per
    pair and group g of 4 inputs at word 4g the first row's (x0, x2), the second's, the first's (x1, x3), the
    second's, each an int16 pair."""
    rows, k = x.shape
    out = np.zeros((rows // 2, k // 4, 4), np.uint32)
    for p in range(rows // 2):
        for g in range(k // 4):
            for h in range(2):
                v = [int(t) for t in x[2 * p + h, 4 * g:4 * g + 4]]
                out[p, g, h] = (v[0] & 0xFFFF) | (v[2] & 0xFFFF) << 16
                out[p, g, 2 + h] = (v[1] & 0xFFFF) | (v[3] & 0xFFFF) << 16
    return out.astype("<u4").tobytes()


def _own(words: list, end8: int, k: int, n: int) -> list:
    b8 = 8 + 4 * k + 24
    rights = [words[i * b8 + 8 + 4 * k + 3 * c + 2] for i in range(n // 8) for c in range(8)]
    if n % 8 == 4:
        rights += [words[end8 + 4 + 2 * k + 3 * c + 2] for c in range(4)]
    return rights


def _run_at(body: list, data: bytes, x_at: int, y_at: int, rows: int, words: list, end8: int, region: tuple,
            readonly: bool):
    """Runs the function on memory holding `data` at X0 (read only, or the read-write region of an in-place layer)."""
    k_mem = 4096
    mem = bytearray(WIDE0 + k_mem)
    mem[X0:X0 + len(data)] = data
    for i, w in enumerate(words):
        mem[STREAM0 + 4 * i:STREAM0 + 4 * i + 4] = (w & M32).to_bytes(4, "little")
    mem[D0:D0 + 4] = STREAM0.to_bytes(4, "little")
    mem[D0 + 4:D0 + 8] = (STREAM0 + 4 * end8).to_bytes(4, "little")
    mem[SP_TOP:SP_TOP + 4] = WIDE0.to_bytes(4, "little")
    lo, hi = region
    readable = [(D0, D0 + 8), (STREAM0, STREAM0 + 4 * len(words)), (SP_TOP, SP_TOP + 4)]
    writable = [(SP_TOP - 8192, SP_TOP), (WIDE0, WIDE0 + k_mem)]
    if readonly:
        readable.append((X0, X0 + len(data)))
        writable.append((lo, hi))
    else:
        writable.append((X0, X0 + max(len(data), hi - X0)))
    m = Machine(mem, readable=readable, writable=writable)
    run(body, m, (x_at, D0, y_at, rows))
    assert m.reg("sp") == SP_TOP
    return mem, m.cycles


@pytest.mark.parametrize("k,n,rows,own", [(28, 8, 10, True), (28, 16, 6, False), (16, 32, 4, True), (12, 12, 2, False),
                                          (32, 64, 4, False), (28, 8, 0, True), (28, 16, 8, True), (28, 12, 6, True)])
def test_gemm_asm_pre_widened_pairs(k, n, rows, own):
    """The "pre" mode (conv_stream_widened's windows, widened by the caller): the same outputs as the GEMM on the
    int8 rows, reading nothing but the widened pairs (4K bytes each) and writing nothing but the outputs and the
    frame; cheaper than widening in the function (the 27-tap stems)."""
    rng = np.random.default_rng(k * 7 + n + rows)
    tail = n % 8 == 4
    words, end8 = random_stream(rng, k, n)
    rights = _own(words, end8, k, n) if own else None
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    pair_rows = not (own and rows % 4 == 0)  # dsp_work.quads_only: chunks of a multiple of 4 windows
    body = gemm_asm_body("f", k, n, tail, -128, 127, True, "pre", rights, pair_rows=pair_rows)
    assert not any(l.startswith("sxtb16") for l in body) and (".Lpair_f:" in body) == pair_rows
    mem, cycles = _run_at(body, widen_pairs(x), X0, Y0, rows, words, end8, (Y0, Y0 + rows * n), True)
    y = np.frombuffer(bytes(mem[Y0:Y0 + rows * n]), np.int8).astype(np.int64).reshape(rows, n)
    assert np.array_equal(y, expected(x, words, end8, k, n, tail, -128, 127))
    if rows >= 4:
        _, arg_cycles = call(gemm_asm_body("f", k, n, tail, -128, 127, True, "arg", rights), x, words, end8, n)
        assert cycles < arg_cycles


@pytest.mark.parametrize("n,rows", [(8, 12), (16, 6), (12, 9), (8, 3), (8, 0), (24, 3)])
def test_gemm_asm_stem_overlapping_windows(n, rows):
    """The "stem" mode (conv_stem_s2's buffer: per pixel a period of 9 words of int16 pairs, window j the 14 words
    from STEM_PERIOD j, its last 5 the next period's first): three rows at a time, each word shared by two windows
    loaded once; the same outputs as the GEMM on the windows narrowed back to int8 (word 2g + h: taps 4g + h and
    4g + h + 2), reading nothing past the last window's 14 words; fewer cycles than the "pre" mode on the same
    windows."""
    k = 28
    rng = np.random.default_rng(n * 5 + rows)
    tail = n % 8 == 4
    words, end8 = random_stream(rng, k, n)
    rights = _own(words, end8, k, n)
    halves = rng.integers(-128, 128, (rows * STEM_PERIOD + 20) // 2).astype(np.int16)
    buf = halves.astype("<i2").tobytes()
    x = np.zeros((rows, k), np.int8)
    for j in range(rows):
        win = halves[STEM_PERIOD * j // 2:STEM_PERIOD * j // 2 + k]  # 14 words, (lo, hi) each
        for m in range(k // 2):
            g, h = divmod(m, 2)
            x[j, 4 * g + h], x[j, 4 * g + h + 2] = win[2 * m], win[2 * m + 1]
    body = gemm_asm_body("f", k, n, tail, -128, 127, True, "stem", rights, pair_rows=False)
    assert not any(l.startswith("sxtb16") for l in body) and ".Lpair_f:" not in body
    mem, cycles = _run_at(body, buf, X0, Y0, rows, words, end8, (Y0, Y0 + rows * n), True)
    y = np.frombuffer(bytes(mem[Y0:Y0 + rows * n]), np.int8).astype(np.int64).reshape(rows, n)
    assert np.array_equal(y, expected(x, words, end8, k, n, tail, -128, 127))
    if rows % 4 == 0 and rows:
        pre = gemm_asm_body("f", k, n, tail, -128, 127, True, "pre", rights, pair_rows=False)
        _, pre_cycles = _run_at(pre, widen_pairs(x), X0, Y0, rows, words, end8, (Y0, Y0 + rows * n), True)
        assert cycles < pre_cycles * 0.97, (cycles, pre_cycles)  # 12 rows of N 8: 3,160 against 3,278


@pytest.mark.parametrize("k,n,rows,wide,own", [(8, 16, 6, "arg", True), (16, 32, 4, "frame", True),
                                               (32, 64, 4, "arg", False), (64, 128, 2, "frame", False),
                                               (32, 16, 6, "arg", False), (16, 16, 4, "frame", True),
                                               (64, 8, 4, "arg", False), (12, 20, 4, "arg", False),
                                               (8, 16, 10, "arg", True), (16, 16, 10, "frame", True),
                                               (20, 12, 8, "frame", True), (32, 8, 6, "arg", True)])
def test_gemm_asm_writes_over_its_input(k, n, rows, wide, own):
    """An in-place 1x1 layer's GEMM over its own input (gemm_inplace_direct): the rows at X0, the outputs from X0 too;
    N > K from the last pair backwards (``back``), else forwards; every pair widened before its outputs overwrite
    it: the outputs equal the reference on the original rows. The layer's own functions (``own``) run four rows at a
    time first (quad_block over the rows widened in the frame), forwards or backwards."""
    rng = np.random.default_rng(k * 3 + n + rows)
    tail = n % 8 == 4
    words, end8 = random_stream(rng, k, n)
    rights = _own(words, end8, k, n) if own else None
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    back = n > k
    pair_rows = not (own and rows % 4 == 0)  # emit_dsp._pair_rows: four rows at a time only
    body = gemm_asm_body("f", k, n, tail, -128, 127, True, wide, rights, back, pair_rows)
    assert (".Lpair_f:" in body) == pair_rows
    x_at, y_at = (X0 + (rows - 2) * k, X0 + (rows - 2) * n) if back else (X0, X0)
    mem, _ = _run_at(body, x.tobytes(), x_at, y_at, rows, words, end8, (X0, X0 + rows * max(k, n)), False)
    y = np.frombuffer(bytes(mem[X0:X0 + rows * n]), np.int8).astype(np.int64).reshape(rows, n)
    assert np.array_equal(y, expected(x, words, end8, k, n, tail, -128, 127))
