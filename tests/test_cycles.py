"""Estimated cycles (mcu_gen/device/cycles.py, docs/cycles.md): the QEMU plugin that counts executed
instructions by class builds and loads, classifies hand-written loops exactly, its per-class counts
of an inference add up to the exact -icount instruction count, and `run --json` carries the estimate
(or says why there is none)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcu_gen.boards import get_board
from mcu_gen.device import cycles
from mcu_gen.device.cycles import CLASSES, CYCLES, ClassCounts, CycleCounter, CyclesUnavailable, estimate
from mcu_gen.firmware.toolchain import find_tool

LOOPS = Path(__file__).parent / "data" / "cycles" / "loops.S"
ROOT = Path(__file__).resolve().parent.parent


def build_loops(tmp_path: Path, board: str) -> Path:
    """tests/data/cycles/loops.S for the board's core, everything at 0x10000000."""
    if board == "mps2-an505":
        flags = ["-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", "-Wl,-Tbss=0x38000000", "-DSTACK_TOP=0x38010000"]
    else:
        flags = ["-mcpu=cortex-m55", "-Wl,-Tbss=0x30000000", "-DSTACK_TOP=0x30010000", "-DWITH_MVE"]
    elf = tmp_path / f"loops-{board}.elf"
    subprocess.run([find_tool("arm-none-eabi-gcc"), *flags, "-mthumb", "-mfloat-abi=hard", "-nostdlib",
                    "-nostartfiles", "-Wl,-Ttext=0x10000000", "-Wl,-e,reset", "-x", "assembler-with-cpp",
                    str(LOOPS), "-o", str(elf)], check=True, capture_output=True)
    return elf


def run_plugin(board_name: str, elf: Path) -> tuple[list, ClassCounts]:
    """Runs `elf` to its semihosting exit under -icount with the plugin: (segments, totals)."""
    board = get_board(board_name)
    counter = CycleCounter.for_board(board, elf)
    assert counter.available, counter.reason
    cmd = [find_tool("qemu-system-arm"), "-M", board.emulator.machine, "-display", "none", "-monitor", "none",
           "-serial", "null", "-semihosting-config", "enable=on,target=native", "-kernel", str(elf),
           "-icount", f"shift={board.emulator.icount_shift}", *counter.qemu_args()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    segments, total = cycles.parse_output(counter.output.read_text())
    counter.close()
    return segments, total


def test_plugin_classes_match_its_source():
    """The class names the plugin prints are the table's (parse_output checks them on every run)."""
    src = cycles.PLUGIN_SOURCE.read_text()
    names = src[src.index("kClassNames[N_CLASSES] = {"):].split("};")[0]
    assert tuple(n.strip().strip('"') for n in names.split("{", 1)[1].split(",")) == CLASSES
    for core, table in CYCLES.items():
        assert set(table) == set(CLASSES), core


# Per segment of loops.S (between two calls of mcu_pal_ticks): every segment also has the `bx lr` that
# returns from mcu_pal_ticks, `mov r0, r5` + `movs r1, #100` before the loop and the `bl mcu_pal_ticks`;
# loops 6-8 also the `b` over their padding to a loop head at the end of a 1 KB page.
FRAME = {"branch_reg": 1, "call": 1, "alu": 2}
FRAME_PAGE = {**FRAME, "branch": 1}
LOOP_COUNTS = {
    1: {"load": 100, "mac_dsp": 100, "alu": 100, "branch_cond": 100},              # ldr; smlad; subs; bne
    2: {"load_pipelined": 100, "load": 100, "alu": 300, "branch_cond": 100},       # ldr; ldr; add; add; subs; bne
    3: {"fp_ls": 100, "fp_mac": 100, "alu": 100, "branch_cond": 100},              # vldr; vfma; subs; bne
    4: {"alu": 200, "load_pipelined": 100, "store": 100, "branch_cond": 100},     # add; ldr; str; subs; bne
    5: {"mve_ls": 100, "mve_dp_overlap": 100, "alu": 100, "branch_cond": 100},     # vldrb; vmladava; subs; bne
}
LOOP_COUNTS.update({6: LOOP_COUNTS[2], 7: LOOP_COUNTS[4], 8: LOOP_COUNTS[5]})  # the same, a page boundary inside
# Their cycles by the Cortex-M4 TRM's Table 3-1 (P = 2), per iteration and once for the frame:
#   1: ldr 2 (no load/store follows) + smlad 1 + subs 1 + bne 1 + P = 7
#   2: ldr 1 (pipelined with the next ldr) + ldr 2 + add 1 + add 1 + subs 1 + bne 1 + P = 9
#   3: vldr 2 + vfma 3 + subs 1 + bne 1 + P = 9
#   4: add 1 + ldr 1 (pipelined with the store) + 1 (its address is the add's result: no forwarding,
#      Cortex-M3/M4 TRM load/store timings) + str 1 + subs 1 + bne 1 + P = 8
#   M55 5: vldrb 2 (4 beats, dual-beat) + vmladava 1 (overlapped) + subs 1 + bne 1 + P = 7
#   frame: bx lr 1 + P, mov 1, movs 1, bl 1 + P = 8 (loops 6-8: + b 1 + P = 11); the last iteration's bne
#   falls through (- P)
LOOP_CYCLES = {1: 100 * 7 + 8 - 2, 2: 100 * 9 + 8 - 2, 3: 100 * 9 + 8 - 2, 4: 100 * 8 + 8 - 2, 5: 100 * 7 + 8 - 2,
               6: 100 * 9 + 11 - 2, 7: 100 * 8 + 11 - 2, 8: 100 * 7 + 11 - 2}
LOOP_STALLS = {4: {"load_pipelined": 100}, 7: {"load_pipelined": 100}}
LOOP_ORDER = {"mps2-an505": [1, 2, 3, 4, 6, 7], "mps3-an547": [1, 2, 3, 4, 6, 7, 8, 5]}  # as in loops.S


@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
def test_hand_written_loops_are_classified_exactly(board, tmp_path, qemu_tools):
    """Each loop's classes, taken branches, address stalls and estimate; loops 6-8 put a page boundary (where
    QEMU ends a translation block) between the two instructions of a pipelined load pair, an address stall and
    an MVE overlap, and must count exactly as loops 2, 4 and 5 (the plugin joins the blocks' neighbours)."""
    segments, total = run_plugin(board, build_loops(tmp_path, board))
    order = LOOP_ORDER[board]
    assert len(segments) == len(order)
    core = get_board(board).core
    for seg, k in zip(segments, order):
        expected = dict(LOOP_COUNTS[k])
        for c, v in (FRAME_PAGE if k >= 6 else FRAME).items():
            expected[c] = expected.get(c, 0) + v
        assert seg.nonzero() == expected, k
        assert seg.instructions == sum(expected.values())
        assert seg.taken["branch_cond"] == 99 and seg.taken["call"] == 1 and seg.taken["branch_reg"] == 1
        assert seg.taken["branch"] == (1 if k >= 6 else 0), k
        assert {c: n for c, n in seg.stalls.items() if n} == LOOP_STALLS.get(k, {}), k
        assert estimate(seg, core).cycles == LOOP_CYCLES[k], k
    assert total is not None and total.counts["unknown"] == 0
    assert total.instructions == sum(total.counts.values())


def test_estimate_range_and_m33_lower_bound():
    """On the M33 every class costs at least one cycle: the estimate is never below the instructions."""
    c = ClassCounts(10, {"alu": 4, "load": 2, "div": 1, "branch_cond": 3}, {}, {"branch_cond": 2})
    e = estimate(c, "cortex-m33")
    assert e.cycles == 4 + 2 * 2 + 7 + 3 + 2 * 2
    assert e.low == 4 + 4 + 2 + 3 + 2 and e.high == 4 + 4 + 12 + 3 + 6
    assert all(min(cost.base, cost.low if cost.low is not None else cost.base) >= 1
               for name, cost in CYCLES["cortex-m33"].items() if name != "it")
    with pytest.raises(CyclesUnavailable, match="no cycle table for cortex-m0"):
        estimate(c, "cortex-m0")


def check_run_json(d: dict, board: str) -> None:
    n = d["instructions_per_inference"]
    assert d["cycles_unavailable"] is None
    # the plugin's classes of that inference add up to QEMU's exact -icount instruction count
    assert sum(d["instruction_classes"].values()) == n
    assert "unknown" not in d["instruction_classes"]
    cyc = d["estimated_cycles_per_inference"]
    lo, hi = d["estimated_cycles_range"]
    assert lo <= cyc <= hi
    if board == "mps2-an505":
        assert cyc >= n  # one instruction per cycle at most on the M33
    assert d["clock_hz"] == get_board(board).clock_hz
    assert d["estimated_ms_per_inference"] == pytest.approx(cyc / d["clock_hz"] * 1e3)
    assert len(d["estimated_cycles"]) == d["n_inferences"]
    assert "zero wait states" in d["cycle_assumptions"] and "address" in d["cycle_assumptions"]
    assert isinstance(d["address_stalls"], int) and d["address_stalls"] >= 0
    assert sum(d["estimated_cycles_by_class"].values()) == pytest.approx(cyc, abs=len(CLASSES))


@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
def test_run_json_carries_estimated_cycles(board, tmp_path, capsys, qemu_tools):
    from mcu_gen.cli import main as cli_main

    rc = cli_main(["run", "--board", board, "--model", str(ROOT / "examples" / "mul_add" / "model.py"),
                   "--out", str(tmp_path), "--json"])
    assert rc == 0
    check_run_json(json.loads(capsys.readouterr().out), board)


def test_int8_run_estimates_cycles(tmp_path, qemu_tools):
    from mcu_gen.device.runner import run

    r = run(str(ROOT / "examples" / "mnist" / "model.py"), board="mps2-an505", out=tmp_path, quantize="int8",
            io="int8", n_random=1, max_inputs=1, backend="portable")
    assert r.bit_exact
    check_run_json(r.to_json(), "mps2-an505")


def test_run_says_why_when_qemu_rejects_the_plugin(tmp_path, monkeypatch, qemu_tools):
    """A plugin QEMU cannot load: `run` still verifies, without estimates, and says why."""
    from mcu_gen.device.runner import run

    bad = tmp_path / "not-a-plugin.so"
    bad.write_text("not an ELF shared object\n")
    monkeypatch.setenv("MCU_GEN_QEMU_PLUGIN", str(bad))
    r = run(str(ROOT / "examples" / "mul_add" / "model.py"), board="mps2-an505", out=tmp_path / "out")
    assert r.verified and r.instructions_per_inference
    assert r.estimated_cycles_per_inference is None and r.estimated_ms_per_inference is None
    assert "QEMU did not start with the cycle-counting plugin" in r.cycles_unavailable


def test_no_compiler_is_a_reason_not_a_crash(tmp_path, monkeypatch, qemu_tools):
    monkeypatch.setenv("MCU_GEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MCU_GEN_QEMU_PLUGIN", raising=False)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(CyclesUnavailable, match="cannot run the host C compiler"):
        cycles.build_plugin()
    counter = CycleCounter.for_board(get_board("mps2-an505"), build_loops(tmp_path, "mps2-an505"))
    assert not counter.available and "host C compiler" in counter.reason
    assert counter.qemu_args() == ()


def test_boards_without_a_table_say_so(tmp_path):
    counter = CycleCounter.for_board(get_board("rv32-virt"), tmp_path / "none.elf")
    assert not counter.available and "not an emulated Arm core" in counter.reason


def test_elf_symbol_finds_the_marker(tmp_path, qemu_tools):
    elf = build_loops(tmp_path, "mps2-an505")
    assert cycles.elf_symbol(elf, "mcu_pal_ticks") == 0x10000008
    assert cycles.elf_symbol(elf, "no_such_symbol") is None
