"""Issue 24's capture bugs: 0-dim (shape []) tensors, pixel_shuffle(x, 1), in-place ops in fp32 islands,
_assert_tensor_metadata, integer inputs through --quantize int8."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.capture.model_file import spec_from_module
from mcu_gen.firmware.builder import load_program
from mcu_gen.reference.inputs import plan_check_inputs
from mcu_gen.firmware.host import run_on_host
from mcu_gen.reference import run_reference
from mcu_gen.reference.inputs import float_random_inputs, matched_inputs, random_inputs


class Scalars(torch.nn.Module):
    """Takes two scalars, returns scalars: add, mul, sub, div, relu, rsub, zeros_like, full_like."""

    def forward(self, x, y):
        a = torch.relu(x + y) * 2.0 - y
        b = torch.rsub(a, y) / (y * y + 1.0)
        z = torch.zeros_like(x) + torch.full_like(y, 3.0)
        return a, b + z, torch.mul(x, y)


class ScoreAndThreshold(torch.nn.Module):
    """A tensor and a scalar threshold in; a tensor and a scalar score out."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x, thr):
        h = torch.relu(self.fc(x))
        return h - thr, h.sum(dim=(0, 1)) * 0.125 * thr


def _spec(net, example, calibration=None):
    return spec_from_module(net, example, calibration)


def _scalars():
    return _spec(Scalars(), (torch.tensor(1.5), torch.tensor(-0.25)))


def _score():
    torch.manual_seed(1)
    cal = [(torch.randn(2, 8), torch.rand(())) for _ in range(8)]
    return _spec(ScoreAndThreshold(), (torch.randn(2, 8), torch.tensor(0.1)), cal)


def test_random_inputs_keep_zero_dim_shapes():
    program, _, _ = load_program(_scalars())
    assert [program.tensor(i).shape for i in program.inputs] == [(), ()]
    for sets in (random_inputs(program, 2), float_random_inputs(program, 2),
                 matched_inputs([(np.float32(1.0), np.array(2.0, np.float32))], 2), [plan_check_inputs(program)]):
        for one in sets:
            assert [np.shape(x) for x in one] == [(), ()]
            assert all(isinstance(x, np.ndarray) for x in one)


def test_zero_dim_fp32_host_and_reference_match_torch():
    spec = _scalars()
    program, _, _ = load_program(spec)
    for x, y in [(1.5, -0.25), (-2.0, 0.5), (0.0, 3.0)]:
        xs = (np.array(x, np.float32), np.array(y, np.float32))
        want = [o.numpy() for o in spec.module(*map(torch.from_numpy, xs))]
        for got in (run_on_host(program, list(xs)), run_reference(program, list(xs))):
            assert [np.shape(g) for g in got] == [(), (), ()]
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)


def test_zero_dim_int8_program_builds_and_reference_runs():
    program, _, spec = load_program(_score(), quantize="int8")
    assert program.tensor(program.inputs[1]).shape == ()
    outs = run_reference(program, [np.zeros((2, 8), np.float32), np.array(0.5, np.float32)])
    assert [np.shape(o) for o in outs] == [(2, 4), ()]


@pytest.mark.qemu
def test_zero_dim_models_verify_on_qemu(tmp_path, qemu_tools):
    r = mcu_gen.run(_scalars(), board="mps2-an505", out=tmp_path / "scalars")
    assert r.verified, f"max abs error {r.max_abs_error} > {r.tolerance}"
    r = mcu_gen.run(_score(), board="mps2-an505", out=tmp_path / "score")
    assert r.verified, f"max abs error {r.max_abs_error} > {r.tolerance}"
    r = mcu_gen.run(_score(), board="mps2-an505", quantize="int8", out=tmp_path / "score-int8")
    assert r.verified and r.bit_exact


# -- pixel_shuffle(x, 1) / pixel_unshuffle(x, 1): a graph output that views the input through no-op permutes
class Shuffle1(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.pixel_shuffle(x, 1), torch.nn.functional.pixel_unshuffle(x, 1), x + 1.0


@pytest.mark.parametrize("shape", [(1, 9, 2, 2), (1, 1, 6, 6)])
def test_pixel_shuffle_by_one_output_gets_its_own_bytes(shape):
    from mcu_gen.plan import picture

    x = torch.randn(shape)
    spec = _spec(Shuffle1(), (x,))
    program, _, _ = load_program(spec)
    for o in program.outputs[:2]:  # outputs are never the input's bytes
        root = o
        while root in program.meta.get("aliases", {}):
            root = program.meta["aliases"][root]
        assert root not in program.inputs
    assert picture.summary(program)["peak_ops"]  # the build report (it failed with IndexError)
    got = run_on_host(program, [x.numpy()])
    for g, w in zip(got, spec.module(x)):
        np.testing.assert_array_equal(g, w.numpy())


# -- export artifacts and in-place operators in fp32 islands
class ToDtype(torch.nn.Module):
    def forward(self, x):
        return x.to(torch.float32) * 2.0, x.float() + 1.0


def test_assert_tensor_metadata_is_dropped():
    x = torch.randn(2, 3)
    spec = _spec(ToDtype(), (x,))
    ep = torch.export.export(spec.module, (x,)).run_decompositions()
    assert any(n.target is torch.ops.aten._assert_tensor_metadata.default for n in ep.graph.nodes)
    program, _, _ = load_program(spec)
    assert not any("assert" in ins.op for ins in program.instructions)
    for g, w in zip(run_on_host(program, [x.numpy()]), spec.module(x)):
        np.testing.assert_array_equal(g, w.numpy())


class LinearAlgebra(torch.nn.Module):
    def forward(self, x):
        a = x @ x.T + torch.eye(3)
        return torch.linalg.inv(a), torch.linalg.cholesky(a), torch.linalg.solve(a, x)


def test_linalg_error_checks_are_dropped():
    """torch.linalg.inv / cholesky / solve raise on a bad matrix through _linalg_check_errors, which torch.export
    keeps as an effect behind a token input ("TOKEN inputs are not supported" before): capture drops the checks and
    their token, and the program keeps the operators and their info outputs."""
    x = torch.randn(3, 3)
    spec = _spec(LinearAlgebra(), (x,))
    ep = torch.export.export(spec.module, (x,)).run_decompositions()
    assert any(s.kind.name == "TOKEN" for s in ep.graph_signature.input_specs)
    program, _, _ = load_program(spec)
    ops = [ins.op for ins in program.instructions]
    assert {"aten::linalg_inv_ex.inverse", "aten::linalg_cholesky_ex.L", "aten::_linalg_solve_ex.result"} <= set(ops)
    assert not any("check_errors" in op for op in ops) and len(program.inputs) == 1


class InplaceIsland(torch.nn.Module):
    """In-place activations as torchvision's MobileNetV3 has them; hardswish_ is an fp32 island in int8."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.c = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.a = torch.nn.Hardswish(inplace=True)
        self.c2 = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.a(self.c(x))
        return self.c2(torch.nn.functional.hardsigmoid(y, inplace=True) * y)


def test_inplace_activation_in_int8_program():
    torch.manual_seed(2)
    cal = [(torch.randn(1, 3, 8, 8),) for _ in range(6)]
    spec = _spec(InplaceIsland(), cal[0], cal)
    program, _, _ = load_program(spec, quantize="int8")
    assert program.meta["quantized"] == "int8"
    got = run_reference(program, [cal[0][0].numpy()])[0]
    want = spec.module(cal[0][0]).detach().numpy()
    assert np.abs(got - want).max() < 0.1 * np.abs(want).max() + 0.05


# -- integer inputs in int8 programs
class TokenClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.e = torch.nn.Embedding(20, 8)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, ids):
        return self.fc(self.e(ids).sum(dim=1) * 0.2)


def _tokens():
    g = torch.Generator().manual_seed(3)
    cal = [(torch.randint(0, 20, (1, 5), generator=g),) for _ in range(8)]
    return _spec(TokenClassifier(), cal[0], cal)


@pytest.mark.parametrize("io", ["float32", "int8"])
def test_int8_program_keeps_integer_inputs(io):
    spec = _tokens()
    program, _, _ = load_program(spec, quantize="int8", io=io)
    assert program.tensor(program.inputs[0]).dtype == "int64"
    ids = spec.calibration_inputs[0][0]
    got = run_reference(program, [ids.numpy()])[0]
    if io == "int8":
        from mcu_gen.reference.inputs import dequantize_outputs
        got = dequantize_outputs(program, [got])[0]
    want = spec.module(ids).detach().numpy()
    assert np.abs(got - want).max() < 0.1 * np.abs(want).max() + 0.05


@pytest.mark.qemu
def test_int8_token_classifier_bit_exact_on_qemu(tmp_path, qemu_tools):
    r = mcu_gen.run(_tokens(), board="mps2-an505", quantize="int8", out=tmp_path / "tokens")
    assert r.verified and r.bit_exact
    assert r.top1_agreement is not None and r.max_abs_error > 0  # compared with fp32 (integer inputs too)


# -- a number where the schema has a Tensor (sub.Tensor(1.0, x), from 1.0 - x and rsub(x, 2))
class NumberFirst(torch.nn.Module):
    def forward(self, x):
        return 1.0 - x, torch.rsub(x, 2)


def test_number_as_first_operand_becomes_a_constant():
    x = torch.randn(2, 3)
    spec = _spec(NumberFirst(), (x,))
    program, _, _ = load_program(spec)
    assert "aten::sub.out" in program.operators
    for g, w in zip(run_on_host(program, [x.numpy()]), spec.module(x)):
        np.testing.assert_array_equal(g, w.numpy())


def test_rnn_flat_weights_warning_is_not_passed_on():
    """torch.export warns that an nn.GRU/LSTM's `_flat_weights` "were assigned during export" (harmless: the module
    re-reads its parameters into that list): mcu-gen's export does not pass it on to the user."""
    import warnings

    from mcu_gen.capture.export import export_module

    gru = torch.nn.LSTM(4, 8, num_layers=2, batch_first=True)
    x = (torch.randn(1, 3, 4),)
    with warnings.catch_warnings(record=True) as raw:
        warnings.simplefilter("always")
        torch.export.export(gru.eval(), x)
    assert any("_flat_weights" in str(w.message) for w in raw)  # what torch itself says
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        export_module(gru, x)
    assert not [str(w.message) for w in ours if "_flat_weights" in str(w.message)]


def test_a_failed_export_is_said_in_short_with_the_users_call(tmp_path, capfd):
    """nn.Transformer checks whether tgt_mask is causal with torch.equal (a data-dependent guard) unless given
    tgt_is_causal: torch.export fails, and prints a partial graph of some hundred lines to stderr. mcu-gen's error
    is torch's first paragraph, the user's call and a hint; the partial graph is not printed."""
    from mcu_gen.capture.export import ExportError, capture

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.t = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True)

        def forward(self, src, tgt):
            return self.t(src, tgt, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1]))

    spec = spec_from_module(T().eval(), (torch.randn(1, 5, 8), torch.randn(1, 3, 8)), name="t")
    with pytest.raises(ExportError) as e:
        capture(spec)
    text = str(e.value)
    assert "GuardOnDataDependentSymNode" in text and "raised at:" in text and "test_capture_fixes.py" in text
    assert "tgt_is_causal=True" in text
    assert len(text.splitlines()) <= 8, text
    assert "def forward(self" not in capfd.readouterr().err
