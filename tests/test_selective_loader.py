"""The selective loader of an image without uploads (docs/loader.md): a runtime built for some value
kinds only, without inline constants and with every call cached (MCU_VALUE_KINDS, MCU_CONSTANT_BUFFERS=0,
MCU_ALL_CALLS_CACHED) runs the programs it was built for, refuses what it was not built for with
UnsupportedProgram, and still rejects every crafted corrupt program, on the native runner under
AddressSanitizer and UBSan."""
import numpy as np
import pytest

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.dev import crafted
from mcu_gen.firmware import host, project
from mcu_gen.program import pte
from tests.test_loader_contract import run_program

# Int, Tensor, IntList, TensorList: the kinds of relu, add_const and split (not clamp's Double)
KINDS = (2, 5, 7, 10)
DEFINES = {"MCU_VALUE_KINDS": f"0x{sum(1 << k for k in KINDS):03X}u", "MCU_CONSTANT_BUFFERS": 0,
           "MCU_ALL_CALLS_CACHED": 1, "MCU_INSTRUCTION_CACHE": 1}


@pytest.fixture(scope="module")
def runner():
    sel = kernel_registry.select(list(crafted.RUNNER_OPS))
    assert not sel.missing
    return host.build_runner(sel.kernels, defines=DEFINES)


def test_the_generator_selects_the_kinds_and_layout_of_the_program():
    d = project.selective_runtime_defines(pte.write(crafted.clamp_program()))
    assert d == {"MCU_VALUE_KINDS": "0x032u", "MCU_CONSTANT_BUFFERS": 0}  # Null, Double, Tensor


def test_the_programs_of_its_kinds_load_and_run(runner, tmp_path):
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    for p, want in ((crafted.relu_program(), np.maximum(x, 0)), (crafted.add_const_program(), x + np.arange(4)),
                    (crafted.split_program(constant_part=False), x[:, :2])):
        r = run_program(runner, tmp_path, pte.write(p), p.arena_size, [x])
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-2000:]
        assert np.array_equal(np.fromfile(tmp_path / "out_0.bin", np.float32), want.ravel())


def test_a_value_kind_left_out_is_unsupported(runner, tmp_path):
    p = crafted.clamp_program()  # value 2 is a Double
    r = run_program(runner, tmp_path, pte.write(p), p.arena_size)
    assert r.returncode == 2 and r.stdout.split()[2:] == ["UnsupportedProgram", "2"], r.stdout


def test_more_instructions_than_the_cache_are_unsupported(runner, tmp_path):
    p = crafted.relu_program()
    p.instructions.append(p.instructions[0])
    r = run_program(runner, tmp_path, pte.write(p), p.arena_size)
    assert r.returncode == 2 and r.stdout.split()[2:] == ["UnsupportedProgram", "2"], r.stdout


@pytest.mark.parametrize("name,build,code", crafted.REJECTIONS, ids=[n for n, _, _ in crafted.REJECTIONS])
def test_every_crafted_rule_is_still_rejected(runner, tmp_path, name, build, code):
    r = run_program(runner, tmp_path, build(), 1 << 16)
    assert r.returncode == 2 and r.stdout.split()[2:3] == [code], (name, r.stdout)


def test_operators_in_the_builds_order_need_no_ram_and_another_order_is_refused(tmp_path):
    """MCU_OPERATOR_ORDER (an image without uploads): the kernel table's entry k is operator k of the
    program it was built for, its kernel read from a flash table; a program with another operator
    order is refused (OperatorMissing, detail = the operator), never run with the wrong kernel."""
    sel = kernel_registry.select(list(crafted.RUNNER_OPS))
    relu = crafted.relu_program()
    kernels, n = project._in_operator_order(sel.kernels, pte.write(relu), relu, 0, None)
    assert n == 1 and kernels[0].op == "aten::relu.out" and len(kernels) == len(sel.kernels)
    runner = host.build_runner(kernels, defines={**DEFINES, "MCU_OPERATOR_ORDER": n})
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    r = run_program(runner, tmp_path, pte.write(relu), relu.arena_size, [x])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr[-2000:]
    assert np.array_equal(np.fromfile(tmp_path / "out_0.bin", np.float32), np.maximum(x, 0).ravel())
    other = crafted.add_const_program()  # operator 0 is add: entry 0 is relu
    r = run_program(runner, tmp_path, pte.write(other), other.arena_size, [x])
    assert r.returncode == 2 and r.stdout.split()[2:] == ["OperatorMissing", "0"], r.stdout
    for name, build, code in crafted.REJECTIONS:  # corrupt programs: still rejected (any code, no crash)
        r = run_program(runner, tmp_path, build(), 1 << 16)
        assert r.returncode == 2, (name, r.stdout + r.stderr[-2000:])
