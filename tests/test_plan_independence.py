"""The host references never share the memory plan (issue 16, item 7): every tensor runs in
its own buffer, so a plan that overlaps live tensors cannot corrupt the reference the way it
corrupts the device; every build checks its plan (check_plan, --pte included) and compares
the planned run with the unplanned one on the host."""
import copy

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.plan import inplace_pass, planner
from mcu_gen.program import pte
from mcu_gen.errors import BuildError
from mcu_gen.firmware.builder import load_program
from mcu_gen.program.ir import Instruction, Program
from mcu_gen.reference.integer import run_int8_reference
from mcu_gen.reference import PlannedExecutionError, check_planned_execution, run_reference


def _two_branches() -> Program:
    """y = relu(x) + sigmoid(x): a and b are live together at the add."""
    p = Program()
    x = p.add_tensor((1, 8))
    a = p.add_tensor((1, 8))
    b = p.add_tensor((1, 8))
    one = p.add_scalar("int", 1)
    y = p.add_tensor((1, 8))
    p.instructions += [Instruction("aten::relu.out", [x, a, a]), Instruction("aten::sigmoid.out", [x, b, b]),
                       Instruction("aten::add.out", [a, b, one, y, y])]
    p.inputs, p.outputs = [x], [y]
    return inplace_pass.plan_memory(p)


def _overlap(p: Program, first: int, second: int) -> Program:
    """The same program with `second` planned over `first` (a planner bug)."""
    bad = copy.deepcopy(p)
    bad.values[second].offset = bad.values[first].offset
    return bad


def test_fp32_reference_ignores_an_overlapping_plan():
    p = _two_branches()
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 8)
    want = (torch.relu(torch.from_numpy(x)) + torch.sigmoid(torch.from_numpy(x))).numpy()
    bad = _overlap(p, 1, 2)
    (got,) = run_reference(bad, [x])
    np.testing.assert_array_equal(got, want)
    check_planned_execution(p, [x])  # the good plan runs the same both ways
    with pytest.raises(PlannedExecutionError):
        check_planned_execution(bad, [x])


@pytest.fixture(scope="module")
def mnist_int8():
    program, _data, _spec = load_program("examples/mnist/model.py", quantize="int8", io="int8")
    return program


def test_int8_reference_ignores_an_overlapping_plan(mnist_int8):
    """The first convolution's output is made a program output too (live to the end); the bad
    plan puts the second convolution's output over it."""
    p = copy.deepcopy(mnist_int8)
    first = p.instructions[0].args[-1]
    second = p.instructions[2].args[-1]
    p.outputs.append(first)
    x = np.random.default_rng(0).integers(-128, 128, size=p.tensor(p.inputs[0]).shape, dtype=np.int8)
    want = run_int8_reference(p, [x])
    bad = _overlap(p, first, second)
    got = run_int8_reference(bad, [x])
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    with pytest.raises(PlannedExecutionError):
        check_planned_execution(bad, [x])


def test_pte_builds_check_their_plan(tmp_path):
    good = _two_branches()
    path = tmp_path / "good.pte"
    path.write_bytes(pte.write(good))
    mcu_gen.build(pte_path=path, board="mps2-an505", out=tmp_path / "good", compile=False)
    bad = tmp_path / "bad.pte"
    bad.write_bytes(pte.write(_overlap(good, 1, 2)))
    with pytest.raises(BuildError, match="memory plan is wrong"):
        mcu_gen.build(pte_path=bad, board="mps2-an505", out=tmp_path / "bad", compile=False)


def test_a_pte_planned_again_gets_the_kernels_of_its_new_plan(tmp_path):
    """A .pte whose plan puts a depthwise convolution's output over its input (another runtime's
    in-place kernel) is planned again by mcu-gen, which may choose in-place variants: the firmware
    must get the kernels of the new plan (it got the old operators' kernels and the runtime
    rejected its built-in program: OperatorMissing). A zero-byte scratch at the output's offset
    is no in-place pair."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_generated_kernels import depthwise_program

    p = depthwise_program(np.random.default_rng(4), 12, 5, 8)
    ins = p.instructions[0]
    x, out, scratch = ins.args[0], ins.args[14], ins.args[13]
    p.tensor(scratch).offset = p.tensor(out).offset
    assert planner.inplace_from_offsets(p) == []
    path = tmp_path / "dw.pte"
    p.tensor(out).offset = p.tensor(x).offset  # over its input
    path.write_bytes(pte.write(p))
    r = mcu_gen.build(pte_path=path, board="mps2-an505", out=tmp_path / "dw", compile=False,
                      backend="portable")  # the portable kernel files named below (CMSIS-NN names its own)
    stored = pte.read((tmp_path / "dw" / "model.pte").read_bytes())
    used = {i.op for i in stored.instructions}
    assert all(f"op_{op.replace('::', '_').replace('.out', '')}.cpp" in r.report["kernels"] for op in used), (
        used, r.report["kernels"])
    assert not any(row.get("backend") == "missing" for row in r.report["operators"])
