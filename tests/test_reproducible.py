"""Reproducible builds (issue 25): the planner's exact search is bounded by a node count, not by a
wall-clock timer, so the same model file and flags give the same arena, the same model.pte and the same
firmware.elf on an idle or a loaded machine."""
from __future__ import annotations

import copy
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import pytest

from mcu_gen.firmware import builder
from mcu_gen.plan import inplace_pass, placement, planner

ROOT = Path(__file__).resolve().parents[1]
# A model whose placement runs the exact search and does not finish it within the node budget.
MODEL = ROOT / "tests" / "models_int8" / "attention.py"


def _spin(stop):
    while not stop.is_set():
        pass


class _Load:
    """Every core busy for the duration (the planner must not notice)."""

    def __enter__(self):
        ctx = multiprocessing.get_context("spawn")
        self.stop = ctx.Event()
        self.procs = [ctx.Process(target=_spin, args=(self.stop,), daemon=True) for _ in range(os.cpu_count() or 1)]
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()


def _no_clock(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("the planner read the clock")
    for name in ("monotonic", "time", "perf_counter", "process_time"):
        monkeypatch.setattr(time, name, fail)


@pytest.fixture(scope="module")
def program():
    prog, _, _ = builder.load_program(model=MODEL, quantize="int8", io="float32")
    return prog


def _offsets(p):
    return p.arena_size, [(getattr(v, "offset", None), getattr(v, "mem_id", None)) for v in p.values], \
        [i.op for i in p.instructions]


def test_planner_reads_no_clock_and_is_repeatable(program, monkeypatch):
    first = copy.deepcopy(program)
    inplace_pass.plan_memory(first)
    assert first.meta["plan"]  # planned
    _no_clock(monkeypatch)
    second = copy.deepcopy(program)
    inplace_pass.plan_memory(second)
    assert _offsets(second) == _offsets(first)


def test_tiny_node_budget_is_deterministic_and_still_valid(program, monkeypatch):
    monkeypatch.setattr(placement, "NODE_LIMIT", 3)
    a, b = copy.deepcopy(program), copy.deepcopy(program)
    inplace_pass.plan_memory(a)
    with _Load():
        inplace_pass.plan_memory(b)
    assert _offsets(a) == _offsets(b)
    planner.check_plan(a)


def test_the_default_budget_binds_here_and_stops_at_a_count(program):
    # This model's exact search does not finish in the default budget, so a timer would make its
    # result depend on the machine's speed; the count makes it the same every time.
    bufs = placement.make_buffers(planner.lifetimes(copy.deepcopy(program)), [])
    idle = placement.place(bufs)
    assert "exact" in idle.tried and not idle.exact_complete
    assert placement.exact_search.last_nodes == placement.NODE_LIMIT + 1
    with _Load():
        loaded = placement.place(bufs)
    assert (loaded.top, loaded.offsets, loaded.strategy) == (idle.top, idle.offsets, idle.strategy)
    placement.place(bufs, node_limit=3)
    assert placement.exact_search.last_nodes == 4


def test_build_twice_once_under_load_gives_identical_bytes(tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("arm-none-eabi-gcc is not installed: the firmware cannot be compiled")
    a = builder.build(MODEL, board="mps2-an505", out=tmp_path / "a", quantize="int8", io="float32")
    with _Load():
        b = builder.build(MODEL, board="mps2-an505", out=tmp_path / "b", quantize="int8", io="float32")
    assert (tmp_path / "a" / "model.pte").read_bytes() == (tmp_path / "b" / "model.pte").read_bytes()
    assert a.report["arena_bytes"] == b.report["arena_bytes"]
    ra = (tmp_path / "a" / "report.json").read_text()
    rb = (tmp_path / "b" / "report.json").read_text()
    assert ra == rb
    assert a.elf.read_bytes() == b.elf.read_bytes()


def test_ccache_gives_the_compilers_bytes_and_serves_a_second_project(tmp_path, monkeypatch):
    """The firmware compiles through ccache when it is installed (toolchain.ccache_setup): the same ELF as without
    it, and a project in another folder compiles nothing again (its objects are cache hits)."""
    import subprocess

    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("ccache") is None:
        pytest.skip("arm-none-eabi-gcc or ccache is not installed (scripts/setup.sh installs both)")
    monkeypatch.setenv("MCU_GEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MCU_GEN_CCACHE", "0")
    plain = builder.build(MODEL, board="mps2-an505", out=tmp_path / "plain").elf.read_bytes()
    monkeypatch.delenv("MCU_GEN_CCACHE")
    first = builder.build(MODEL, board="mps2-an505", out=tmp_path / "first")
    second = builder.build(MODEL, board="mps2-an505", out=tmp_path / "second")
    assert first.elf.read_bytes() == plain and second.elf.read_bytes() == plain
    stats = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True,
                           env=dict(os.environ, CCACHE_DIR=str(tmp_path / "cache" / "ccache"))).stdout
    counts = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
    misses = int(counts["cache_miss"])
    hits = int(counts["direct_cache_hit"]) + int(counts.get("preprocessed_cache_hit", 0))
    assert hits >= misses > 0, counts  # the second project: every object a hit
    assert "CMAKE_CXX_COMPILER_LAUNCHER" in (second.out / "firmware" / "build" / "CMakeCache.txt").read_text()
