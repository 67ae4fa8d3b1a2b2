"""Generated layers bound at load without the value cache (issue 25): the default build caches no
more values for them, `--value-cache N` no longer turns them back into library kernels, and a layer
after the instruction cache is one (instruction, function) pair instead of every instruction's call: an entry of a
flash table the loader checks in an image without uploads, 8 B of RAM with uploads."""
from __future__ import annotations

from pathlib import Path

from mcu_gen.firmware import builder, project

ROOT = Path(__file__).resolve().parents[1]


def test_value_cache_zero_keeps_the_generated_layers(tmp_path):
    r = builder.build(ROOT / "examples" / "mnist" / "model.py", board="mps2-an505", out=tmp_path / "m",
                      quantize="int8", io="int8", compile=False, value_cache=0)
    vc = r.report["value_cache"]
    assert vc["cached_values"] == 0 and vc["cached_instructions"] == vc["instructions"]
    gen = [row for row in r.report["operators"] if row.get("backend") == "generated"]
    assert len(gen) == len(r.report["generated_kernels"]["layers"]) == 3  # two convolutions and the 400 -> 10 head
    # the default: the runtime's 8 values, not every value of the program
    d = builder.build(ROOT / "examples" / "mnist" / "model.py", board="mps2-an505", out=tmp_path / "d",
                      quantize="int8", io="int8", compile=False)
    assert d.report["value_cache"]["cached_values"] == project.DEFAULT_VALUE_CACHE < d.report["value_cache"]["values"]
    assert len(d.report["generated_kernels"]["layers"]) == 3


def test_a_layer_after_the_instruction_cache_is_a_flash_table_entry(tmp_path):
    model = ROOT / "tests" / "models_int8" / "mha_encoder.py"  # 36 instructions, generated layers past the 8th
    r = builder.build(model, board="mps2-an505", out=tmp_path / "l", quantize="int8", compile=False)
    vc = r.report["value_cache"]
    cached = vc["cached_instructions"]
    bound = [row for row in r.report["generated_kernels"]["layers"] if row["instruction"] >= cached]
    assert vc["instructions"] > 30 and cached == project.DEFAULT_INSTRUCTION_CACHE
    assert len(bound) >= 5 and vc["bound_calls"] == len(bound)
    # without uploads the pairs are a flash table the loader checks: no RAM
    assert vc["bound_table"] and vc["bytes"] == (project.VALUE_CACHE_ENTRY_BYTES * project.DEFAULT_VALUE_CACHE
                                                 + project.INSTRUCTION_CACHE_ENTRY_BYTES
                                                 * project.DEFAULT_INSTRUCTION_CACHE)
    cmake = "".join(p.read_text() for p in (tmp_path / "l").rglob("CMakeLists.txt"))
    assert f"MCU_BOUND_TABLE={len(bound)}" in cmake and "MCU_BOUND_CALLS" not in cmake
    table = (tmp_path / "l" / "firmware" / "src" / "kernel_table.cpp").read_text()
    assert all(f"{{{row['instruction']}, &generated::{row['function']}}}" in table for row in bound)
    # with uploads (any program may come): 8 B of RAM per pair, found at load
    u = builder.build(model, board="mps2-an505", out=tmp_path / "u", quantize="int8", compile=False, upload=True)
    vu = u.report["value_cache"]
    assert not vu["bound_table"] and vu["bytes"] == vc["bytes"] + project.BOUND_CALL_BYTES * vu["bound_calls"]
    assert "MCU_BOUND_CALLS" in "".join(p.read_text() for p in (tmp_path / "u").rglob("CMakeLists.txt"))
