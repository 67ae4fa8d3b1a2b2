"""The smmlar GEMM in assembly for the DSP cores (Cortex-M33, M4): ``gemm_asm_body`` gives the instructions of
one generated GEMM function: rows four at a time (dsp_gemm_quads.py), in pairs (dsp_gemm_pairs.py), then a last
single row (``_block_asm`` here); the requantization by SMMLAR (dsp_asm_common.py).
tests/test_gemm_asm_emulated.py runs these instructions in an interpreter."""
from __future__ import annotations

from mcu_gen.backends.generated.dsp_asm_common import clamp_asm, smmlar_asm
from mcu_gen.backends.generated.dsp_gemm_pairs import (WIDE_PTR, pair_block_asm, pair_blocks8, pair_ok,
                                                       widen_rows)
from mcu_gen.backends.generated.dsp_gemm_quads import STEM_PERIOD, quad_block, quad_ok, widen_quad


# -- the smmlar GEMM in assembly (Cortex-M33/M4 with the DSP extension) ---------------------------
ACC8 = ["r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"]  # LDM-loadable: ascending


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
    once (``widen_rows``, ``_pair_macs_wide``): "arg" into the caller's buffer of 4K bytes (the fifth argument,
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
        body += [".Lquad_%=:"] + (widen_quad(k, quad_at) if quad_at is not None else []) + ["ldr r1, [sp, #12]"]
        for c in range(0, n - 3, 8):
            b = 8 if c + 8 <= n else 4
            body += quad_block(b, k, n, act_min, act_max, rights[c:c + b], quad_at, stem, sign)
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
            body += widen_rows(k, wide)
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
