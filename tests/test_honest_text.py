"""Issue 26, "text that is not measured": a report says only what its build measured, a failed
check says it failed (the reference's errors are not swallowed, the per-operator table is not emptied
silently), `--verbose` shows the traceback, and `run --max-int8-error X` is a gate that can fail."""
import types

import numpy as np
import pytest
import torch

from mcu_gen import cli
from mcu_gen.firmware import report
from mcu_gen.firmware.builder import check_method_plan
from mcu_gen.plan import inplace_pass
from mcu_gen.program.ir import Instruction, Program
from mcu_gen.reference import OperatorFailed, ReferenceUnsupported, check_planned_execution
from mcu_gen.reference.accuracy import operator_errors


def _minimal_report(**extra) -> dict:
    r = {"board": "mps2-an505", "arena_bytes": 1, "arena_lower_bound_bytes": 1, "pte_bytes": 1, "flash_bytes": 1,
         "ram_bytes": 1, "operators": []}
    r.update(extra)
    return r


def test_report_md_has_no_fixed_performance_claim():
    md = report.markdown(_minimal_report(generated_kernels={"available_layers": 7}))
    assert "7 layer(s) could run on int8 kernels" in md
    for claim in ("fewer instructions", "1.6-3.2x", "3-26x", "MLPerf"):
        assert claim not in md, claim
    assert "fewer" not in report.generated_hint(3)


def _add_program(bad_shape: bool = False, op: str = "aten::add.out") -> Program:
    """y = relu(x) + relu(z); with bad_shape z (and so the add's second operand) is (1, 5)."""
    p = Program()
    x = p.add_tensor((1, 8))
    z = p.add_tensor((1, 5) if bad_shape else (1, 8))
    a = p.add_tensor((1, 8))
    b = p.add_tensor((1, 5) if bad_shape else (1, 8))
    one = p.add_scalar("int", 1)
    y = p.add_tensor((1, 8))
    p.instructions += [Instruction("aten::relu.out", [x, a, a]), Instruction("aten::relu.out", [z, b, b]),
                       Instruction(op, [a, b, one, y, y])]
    p.inputs, p.outputs = [x, z], [y]
    return inplace_pass.plan_memory(p)


def test_an_operator_that_raises_is_a_failure_not_unsupported():
    """The interpreter keeps the two apart: an operator raising while it runs is OperatorFailed (its
    cause kept), an operator the reference lacks is ReferenceUnsupported; the build's plan check falls
    back to check_plan only for the second (before issue 26 it swallowed both)."""
    x, z = np.ones((1, 8), np.float32), np.ones((1, 5), np.float32)
    with pytest.raises(OperatorFailed) as e:
        check_planned_execution(_add_program(bad_shape=True), [x, z])
    assert not isinstance(e.value, ReferenceUnsupported)
    assert "aten::add.out" in str(e.value) and "RuntimeError" in str(e.value)
    assert isinstance(e.value.cause, RuntimeError) and e.value.__cause__ is e.value.cause
    with pytest.raises(ReferenceUnsupported, match="unknown operator"):
        check_planned_execution(_add_program(op="aten::no_such_operator.out"), [x, x])
    check_method_plan(_add_program(op="aten::no_such_operator.out"))  # unsupported: check_plan alone
    with pytest.raises(OperatorFailed):  # a failure: the build stops and says why
        check_method_plan(_add_program(bad_shape=True))


def test_operator_table_says_why_it_is_missing():
    """A model that cannot be captured again gives one `unavailable` row with the reason, which
    report.md prints, instead of an empty table."""
    class Broken(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
                return x
            return -x

    program = types.SimpleNamespace(meta={"int8_results": {"n": (0, "op", "")}}, instructions=[])
    spec = types.SimpleNamespace(module=Broken(), example_inputs=(torch.ones(1, 4),), calibration_inputs=None)
    rows = operator_errors(program, spec)
    assert len(rows) == 1 and "could not be captured" in rows[0]["unavailable"], rows
    md = report.markdown(_minimal_report(quantize="int8", int8_operator_error=rows))
    assert "Not measured: the fp32 model could not be captured" in md


def test_verbose_prints_the_traceback(capsys, tmp_path):
    missing = str(tmp_path / "missing.pte")
    assert cli.main(["inspect", missing]) == 1
    err = capsys.readouterr().err
    assert "mcu-gen: error:" in err and "Traceback" not in err
    assert cli.main(["inspect", missing, "--verbose"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "mcu-gen: error:" in err


def _run_result(**kw):
    base = dict(quantize="int8", quant_max_abs_error=0.02, verified=True)
    base.update(kw)
    return types.SimpleNamespace(**base)


def test_int8_error_gate_decisions():
    assert cli.int8_error_gate(_run_result(), None) is None  # not asked: the exit code is bit-exactness alone
    failed, line = cli.int8_error_gate(_run_result(), 0.01)
    assert failed and "0.02 > --max-int8-error 0.01" in line
    failed, line = cli.int8_error_gate(_run_result(), 0.05)
    assert not failed and "passed" in line
    failed, line = cli.int8_error_gate(_run_result(quant_max_abs_error=None), 0.05)
    assert failed and "NOT MEASURED" in line  # a gate that cannot be measured does not pass


MODEL = '''
import torch
def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
def example_inputs():
    return (torch.randn(1, 16),)
def calibration_inputs():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(1, 16, generator=g),) for _ in range(8)]
'''


def test_run_max_int8_error_gate_fails_the_run(tmp_path, capsys):
    """On QEMU: the same int8 build is BIT-EXACT and exits 0 without the gate, 3 with a gate below
    its measured error, 0 with one above it."""
    model = tmp_path / "tiny.py"
    model.write_text(MODEL)
    args = ["run", "--model", str(model), "--quantize", "int8", "-n", "2", "--no-cycles", "--out", str(tmp_path / "o")]
    assert cli.main(args + ["--max-int8-error", "1e-9"]) == 3
    out = capsys.readouterr().out
    assert "BIT-EXACT" in out and "INT8 ERROR ABOVE GATE" in out
    err = float(out.split("max abs error vs fp32 ")[1].split()[0])
    assert cli.main(args + ["--max-int8-error", str(err * 2 + 1e-6)]) == 0
    assert "int8 error gate passed" in capsys.readouterr().out
