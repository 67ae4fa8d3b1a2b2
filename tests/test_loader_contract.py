"""The loader's contract (docs/loader.md), one crafted program per rule, on the native
runner under AddressSanitizer and UBSan with exactly-sized program and arena blocks:
every rejection comes with its own error code and no sanitizer report."""
import subprocess

import numpy as np
import pytest

from mcu_gen.dev import crafted
from mcu_gen.firmware import host
from mcu_gen.program import pte
from mcu_gen.backends import kernels as kernel_registry


@pytest.fixture(scope="module")
def runner():
    sel = kernel_registry.select(list(crafted.RUNNER_OPS))
    assert not sel.missing
    return host.build_runner(sel.kernels)


def run_program(runner, tmp_path, data: bytes, arena: int, inputs=()):
    (tmp_path / "p.pte").write_bytes(data)
    paths = []
    for k, x in enumerate(inputs):
        (tmp_path / f"in{k}.bin").write_bytes(np.ascontiguousarray(x).tobytes())
        paths.append(str(tmp_path / f"in{k}.bin"))
    r = subprocess.run([str(runner), str(tmp_path / "p.pte"), str(arena), str(tmp_path), *paths],
                       capture_output=True, text=True, timeout=120)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-3000:]
    return r


@pytest.mark.parametrize("name,build,code", crafted.REJECTIONS, ids=[n for n, _, _ in crafted.REJECTIONS])
def test_each_rule_is_rejected_with_its_code(runner, tmp_path, name, build, code):
    r = run_program(runner, tmp_path, build(), 1 << 16)
    assert r.returncode == 2 and r.stdout.split()[:3][2:] == [code], (name, r.stdout, r.stderr[-2000:])


def test_every_load_error_code_has_a_crafted_program():
    codes = {c for _, _, c in crafted.REJECTIONS} | {"ArenaTooSmall"}  # ArenaTooSmall: below
    assert codes == {"InvalidProgram", "BadIdentifier", "UnsupportedProgram", "OperatorMissing", "BadArgument",
                     "ArenaTooSmall", "ConstantOutOfBounds", "ArenaOutOfBounds", "Misaligned"}


def test_arena_too_small_names_the_arena_needed(runner, tmp_path):
    p = crafted.relu_program()
    r = run_program(runner, tmp_path, pte.write(p), p.arena_size - 16)
    assert r.returncode == 2 and r.stdout.split() == ["load-error", "6", "ArenaTooSmall", str(p.arena_size)]


def test_the_untouched_programs_load_and_run(runner, tmp_path):
    """The crafted programs' bases are valid: each rejection above is the patch's doing."""
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    for p in (crafted.relu_program(), crafted.clamp_program(), crafted.add_const_program(),
              crafted.split_program(constant_part=False)):
        r = run_program(runner, tmp_path, pte.write(p), p.arena_size, [x])
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-2000:]
    small = crafted.depthwise_inplace_overflow_program(taps=43690)  # the largest window that fits
    r = run_program(runner, tmp_path, pte.write(small), small.arena_size)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]


def test_depthwise_inplace_refuses_windows_that_overflow_int32(runner, tmp_path):
    p = crafted.depthwise_inplace_overflow_program()
    r = run_program(runner, tmp_path, pte.write(p), p.arena_size)
    assert r.returncode == 4 and r.stdout.split()[:3] == ["run-error", "16", "KernelFailed"], r.stdout + r.stderr[-2000:]


# -- several planned buffers (RAM regions): a runtime built with MCU_ARENA_REGIONS=2 ------------------
@pytest.fixture(scope="module")
def runner2():
    sel = kernel_registry.select(list(crafted.RUNNER_OPS))
    return host.build_runner(sel.kernels, arena_regions=2)


@pytest.mark.parametrize("name,build,code", crafted.TWO_REGION_REJECTIONS,
                         ids=[n for n, _, _ in crafted.TWO_REGION_REJECTIONS])
def test_two_region_rules_are_rejected_with_their_code(runner2, tmp_path, name, build, code):
    r = run_program(runner2, tmp_path, build(), "65536,65536")
    assert r.returncode == 2 and r.stdout.split()[2:3] == [code], (name, r.stdout, r.stderr[-2000:])


def test_bool_bytes_other_than_0_and_1_read_as_true(runner, tmp_path):
    """A bool tensor holding bytes 2 and 128 (a corrupt program's constant, or arena memory a float
    tensor wrote): every kernel reads a non-zero byte as true, under UBSan's bool check."""
    x = np.array([[10.0, 20.0, 30.0, 40.0]], np.float32)
    r = run_program(runner, tmp_path, crafted.bool_bytes_not_0_or_1(), 1 << 16, [x])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-2000:]
    out = [np.fromfile(tmp_path / f"out_{k}.bin", np.uint8) for k in range(1, 5)]
    assert np.array_equal(np.fromfile(tmp_path / "out_0.bin", np.float32), [11.0, 21.0, 31.0, 40.0])
    assert [o.tolist() for o in out] == [[1, 1, 1, 0], [1, 1, 1, 0], [1], [1]]


def test_two_region_program_runs_with_each_tensor_in_its_buffer(runner2, tmp_path):
    """Input in memory 1, output in memory 2, each arena exactly its planned 16 bytes (ASan would see a
    write into the wrong block or past one); the one-arena runtime refuses memory 2."""
    p = crafted.two_region_relu_program()
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    r = run_program(runner2, tmp_path, pte.write(p), "16,16", [x])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-2000:]
    assert np.array_equal(np.fromfile(tmp_path / "out_0.bin", np.float32), np.maximum(x, 0).ravel())
    back = pte.read(pte.write(p))
    assert back.arena_sizes == [16, 16] and back.values[p.outputs[0]].mem_id == 2


def test_two_region_buffer_larger_than_its_arena_names_the_bytes(runner2, tmp_path):
    p = crafted.two_region_relu_program()
    p.extra_arenas = [48]
    r = run_program(runner2, tmp_path, pte.write(p), "16,32")
    assert r.returncode == 2 and r.stdout.split() == ["load-error", "6", "ArenaTooSmall", "48"]


def test_one_arena_runtime_refuses_a_second_buffer(runner, tmp_path):
    r = run_program(runner, tmp_path, pte.write(crafted.two_region_relu_program()), 1 << 16)
    assert r.returncode == 2 and r.stdout.split()[2] == "UnsupportedProgram", r.stdout
