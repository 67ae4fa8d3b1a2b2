"""The OpInfo conformance harness (mcu_gen/dev/conformance) on a small fixed sample: it classifies
correct / incorrect / missing / refused properly (a deliberately wrong reference is caught), ops mcu-gen
supports pass on the host runner, and a case rebuilt from its id (ExecuTorch's worker) is the same case.
The int8 mode (quantized as `build --quantize int8`, bit-exact with the host integer reference) on a
fixed sample. The full sweeps are bench/bench_ops.py [--quantize int8]."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.dev.conformance import executorch as et
from mcu_gen.dev.conformance.cases import case_by_id, case_for, op_database, op_key
from mcu_gen.dev.conformance.host import HostRunner, _lsb_scale, compare_exact, lower_case, lower_case_int8

# OpInfo entries whose first small float32 sample mcu-gen computes correctly today.
SUPPORTED = ["add", "sub", "mul", "abs", "nn.functional.relu", "sigmoid", "tanh", "cat", "permute", "where",
             "eq", "sum", "softmax", "nn.functional.pixel_shuffle", "nn.functional.pixel_unshuffle", "zeros_like",
             "full_like", "nn.functional.embedding", "mm", "nn.functional.conv2d",
             "nn.functional.pad.replicate_negative", "nn.functional.pad.circular", "_unsafe_masked_index",
             "_unsafe_masked_index_put_accumulate", "stft"]


@pytest.fixture(scope="module")
def db():
    return {op_key(op): op for op in op_database()}


@pytest.fixture(scope="module")
def cases(db):
    out = {}
    for name in SUPPORTED + ["nonzero"]:
        case = case_for(db[name], "float32")
        assert case is not None, f"{name}: no small exportable float32 sample"
        out[name] = case
    return out


@pytest.fixture(scope="module")
def runner(cases):
    """A runner with the kernels these cases use (the bench builds one with every portable kernel)."""
    every = kernel_registry.find_kernels()
    ops = set()
    for name in SUPPORTED:
        program, missing = lower_case(cases[name], every)
        assert not missing, f"{name}: {missing}"
        ops.update(program.operators)
    return HostRunner(available={op: every[op] for op in ops})


@pytest.mark.parametrize("name", SUPPORTED)
def test_supported_ops_are_correct(runner, cases, name):
    r = runner.run(cases[name])
    assert r.status == "correct", f"{cases[name].id}: {r.status}: {r.detail}"


def test_a_wrong_result_is_caught(runner, cases):
    case = cases["add"]
    wrong = [w + 1e-2 * (1 + w.abs().max()) for w in case.expected]
    r = runner.run(case, expected=wrong)
    assert r.status == "incorrect" and "tolerance" in r.detail
    r = runner.run(case, expected=[w.to(torch.int32) for w in case.expected])
    assert r.status == "incorrect" and "dtype" in r.detail
    r = runner.run(case, expected=[w.reshape(-1) for w in case.expected])
    assert r.status == "incorrect" and "shape" in r.detail
    nan = [w.clone() for w in case.expected]
    nan[0].view(-1)[0] = float("nan")
    assert runner.run(case, expected=nan).status == "incorrect"


def test_missing_kernel_is_classified(runner, cases):
    saved = runner.available
    runner.available = {op: k for op, k in saved.items() if op != "aten::abs.out"}
    try:
        r = runner.run(cases["abs"])
    finally:
        runner.available = saved
    assert r.status == "missing" and r.missing == ["aten::abs.out"], r


def test_data_dependent_shape_is_refused_not_crashed(runner, cases):
    r = runner.run(cases["nonzero"])
    assert r.status == "refused" and "depends on the input data" in r.detail, r


def test_case_rebuilt_from_its_id_is_the_same(db, cases):
    for name in ("add", "cat", "nn.functional.embedding"):
        case = cases[name]
        again = case_by_id(case.id, list(db.values()))
        assert again is not None and again.id == case.id
        assert all(torch.equal(a, b) for a, b in zip(case.inputs, again.inputs))
        assert all(torch.equal(a, b) for a, b in zip(case.expected, again.expected))


@pytest.mark.interop
def test_executorch_worker_runs_cases(cases):
    if not et.available():
        pytest.skip("executorch wheel not installed (scripts/setup.sh installs it): no ExecuTorch comparison")
    ids = [cases["add"].id, cases["abs"].id, "no_such_op:float32:0"]
    got = et.run_in_executorch(ids)
    assert got[cases["add"].id][0] == "correct" and got[cases["abs"].id][0] == "correct", got
    assert got["no_such_op:float32:0"][0] == "unsupported"


# -- int8 (bench_ops.py --quantize int8) ----------------------------------------------------------------
# float32 OpInfo cases quantized as `mcu-gen build --quantize int8` does it: int8 kernels (add, mul, conv,
# linear, pools, softmax, cat, views), fp32 islands between quantize and dequantize (sigmoid, sum, layer_norm),
# integer and bool outputs of a quantized graph (argmax, eq), several outputs (max with dim), 0-dim
# results (sum, logsumexp), outputs that are an input or a folded constant (clone, zeros_like), .long() in an
# island, fp32 outputs the reference computes as the kernels do (var_mean), a 0-dim quantized constant operand
# (masked.cumsum: the lowering once read a channel count from its shape, IndexError).
INT8_SAMPLE = ["add", "mul", "nn.functional.conv2d", "nn.functional.linear", "nn.functional.max_pool2d",
               "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d", "softmax", "nn.functional.relu",
               "cat", "permute", "unsqueeze", "sigmoid", "sum", "argmax", "eq", "max.reduction_with_dim",
               "clone", "zeros_like", "long", "logsumexp", "var_mean", "masked.cumsum"]


@pytest.fixture(scope="module")
def int8_cases(db):
    out = {}
    for name in INT8_SAMPLE + ["nonzero"]:
        case = case_for(db[name], "float32")
        assert case is not None, f"{name}: no small exportable float32 sample"
        out[name] = case
    return out


@pytest.fixture(scope="module")
def int8_runner(int8_cases):
    every = kernel_registry.find_kernels()
    ops = set()
    for name in INT8_SAMPLE:
        program, missing = lower_case_int8(int8_cases[name], every)
        assert not missing, f"{name}: {missing}"
        ops.update(program.operators)
    return HostRunner(available={op: every[op] for op in ops})


def test_int8_sample_is_bit_exact(int8_runner, int8_cases):
    bad, modes = [], set()
    for name in INT8_SAMPLE:
        r = int8_runner.run(int8_cases[name], quantize="int8")
        modes.add(r.mode)
        if r.status != "correct" or r.bit_exact is not True:
            bad.append(f"{int8_cases[name].id}: {r.status} ({r.mode}): {r.detail}")
    assert not bad, "\n".join(bad)
    assert {"int8", "fp32 islands"} <= modes  # int8 kernels and fp32 islands both ran


def test_int8_no_internal_error_escapes(int8_runner, int8_cases):
    results = {name: int8_runner.run(case, quantize="int8") for name, case in int8_cases.items()}
    crashes = [f"{n}: {r.detail}" for n, r in results.items() if r.status == "crash"]
    assert not crashes, "\n".join(crashes)
    r = results["nonzero"]
    assert r.status == "refused" and "depends on the input data" in r.detail, r


def test_int8_difference_is_reported_in_lsb(int8_runner, int8_cases):
    from mcu_gen.reference.inputs import quantize_inputs
    from mcu_gen.reference.integer import run_int8_reference

    case = int8_cases["add"]
    program, _ = lower_case_int8(case, int8_runner.available)
    want = run_int8_reference(program, list(quantize_inputs(program, [x.numpy() for x in case.inputs])))
    got = int8_runner.execute(program, case.fresh_inputs())
    assert compare_exact(program, got, want, case.expected)[:2] == (True, True)
    scale = _lsb_scale(program, program.outputs[0])
    assert scale is not None  # a dequantized output
    off = [w + np.float32(2 * scale) for w in want]  # two steps of the output's quantization
    ok, exact, why = compare_exact(program, got, off, case.expected)
    assert not ok and not exact and "2 LSB" in why, why
