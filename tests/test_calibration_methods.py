"""int8 calibration methods (issue 28; mcu_gen/quantize/observers.py, calibration.py): what range each
method gives, bias correction, the comparison every int8 build makes and its recommendation, held-out
calibration samples, and the errors bad choices get. Host only (no firmware is compiled)."""
import json

import numpy as np
import pytest
import torch

from mcu_gen.quantize.observers import METHODS, CalibrationObserver


def _scale(obs) -> float:
    return float(obs.calculate_qparams()[0])


def test_each_method_sets_the_range_it_promises():
    g = torch.Generator().manual_seed(0)
    batches = [torch.rand(1, 10_000, generator=g) for _ in range(9)]
    spiky = torch.rand(1, 10_000, generator=g)
    spiky[0, 123] = 100.0  # one outlier in 100,000 values
    scales = {}
    for method in METHODS:
        obs = CalibrationObserver(dtype=torch.int8, qscheme=torch.per_tensor_affine, quant_min=-128, quant_max=127,
                                  method=method)
        for b in batches + [spiky]:
            obs(b)
        scales[method] = _scale(obs)
    assert scales["minmax"] == pytest.approx(100.0 / 255, rel=1e-3)  # everything kept
    assert scales["percentile"] == pytest.approx(1.0 / 255, rel=0.02)  # the outlier clipped
    assert scales["histogram"] <= scales["minmax"] * (1 + 1e-6)  # never wider than what was seen
    # moving average: nine batches of [0, 1), then the outlier's batch moves the max 0.1 of the way to 100
    assert scales["moving_average"] == pytest.approx((1.0 + 0.1 * 99.0) / 255, rel=0.01)
    obs = CalibrationObserver(dtype=torch.int8, qscheme=torch.per_tensor_affine, quant_min=-128, quant_max=127)
    assert obs.method == "histogram"
    with pytest.raises(ValueError, match="choose one of histogram, minmax, moving_average, percentile"):
        CalibrationObserver(method="mse")


def test_the_cli_offers_exactly_the_methods():
    from mcu_gen.cli.options import CALIBRATION_METHODS, DEFAULT_METHOD
    from mcu_gen.quantize import observers

    assert CALIBRATION_METHODS == observers.CHOICES and DEFAULT_METHOD == observers.DEFAULT_CHOICE == "auto"


class _ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 16, 3)
        self.fc = torch.nn.Linear(16 * 6 * 6, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def test_bias_correction_removes_the_mean_error_of_int8_weights():
    from mcu_gen.quantize.calibration import quantize_ptq

    net = _ConvNet().eval()
    g = torch.Generator().manual_seed(1)
    cal = [(torch.rand(1, 3, 8, 8, generator=g) + 0.5,) for _ in range(32)]  # a mean input far from 0

    def mean_error(gm):
        with torch.no_grad():
            return torch.stack([gm(*x) - net(*x) for x in cal]).mean(0).abs().mean().item()

    plain = quantize_ptq(net, cal[0], cal, compare=False)
    corrected = quantize_ptq(net, cal[0], cal, bias_correction=True, compare=False)
    assert corrected.meta["mcu_calibration"]["bias_correction"] is True
    assert mean_error(corrected) < 0.5 * mean_error(plain), (mean_error(corrected), mean_error(plain))


def _model_file(tmp_path, n_calib=16, with_tests=False):
    path = tmp_path / "net.py"
    path.write_text(f'''
import torch
from tests.test_calibration_methods import _ConvNet

def model():
    return _ConvNet().eval()

def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(1, 3, 8, 8, generator=g),) for _ in range(n)]

def example_inputs():
    return _inputs(1, 1)[0]

def calibration_inputs():
    return _inputs(2, {n_calib})
''' + ("\ndef test_inputs():\n    return _inputs(3, 2)\n" if with_tests else ""))
    return path


def test_every_int8_build_compares_the_methods_and_recommends_a_better_one(tmp_path, capsys):
    from mcu_gen.cli.options import print_calibration
    from mcu_gen.firmware.builder import build

    r = build(str(_model_file(tmp_path)), board="mps2-an505", out=tmp_path / "a", quantize="int8", compile=False,
              calibration_method="moving_average")
    cal = r.report["calibration"]
    assert cal["method"] == "moving_average" and cal["samples"] == 14 and cal["held_out"] == 2
    assert cal["compared_on"] == "2 held-out calibration sample(s)"
    assert {(row["method"], row["bias_correction"]) for row in cal["rows"]} == \
        {(m, bc) for m in METHODS for bc in (False, True)}
    rows = {(row["method"], row["bias_correction"]): row for row in cal["rows"]}
    best = min(rows.values(), key=lambda row: row["relative_rms_error"])
    mine = rows["moving_average", False]["relative_rms_error"]
    if best["relative_rms_error"] < 0.9 * mine:
        assert cal["recommended"]["method"] == best["method"]
        assert cal["recommended"]["chosen_relative_rms_error"] == mine
    else:
        assert cal["recommended"] is None
    # report.json and report.md say the same; build's line shows the hint
    assert json.loads((tmp_path / "a" / "report.json").read_text())["calibration"] == cal
    md = (tmp_path / "a" / "report.md").read_text()
    assert "### Calibration" in md and "| moving_average (used) | no |" in md
    print_calibration(cal)
    out = capsys.readouterr().out
    assert "calibration: moving_average on 14 sample(s), 2 held out" in out
    assert ("hint: --calibration-method" in out) == (cal["recommended"] is not None)


def test_the_default_builds_the_variant_with_the_lowest_measured_error(tmp_path, capsys):
    """No --calibration-method: auto. The build's program is the variant whose row has the lowest error,
    the same bytes as asking for that variant by name, and report.md / the build line say so."""
    from mcu_gen.cli.options import print_calibration
    from mcu_gen.firmware.builder import build

    r = build(str(_model_file(tmp_path)), board="mps2-an505", out=tmp_path / "auto", quantize="int8", compile=False)
    cal = r.report["calibration"]
    best = min(cal["rows"], key=lambda row: row["relative_rms_error"])
    assert cal["selected"] == "auto" and cal["recommended"] is None
    assert (cal["method"], cal["bias_correction"]) == (best["method"], best["bias_correction"])
    assert best["relative_rms_error"] <= min(row["relative_rms_error"] for row in cal["rows"])
    build(str(_model_file(tmp_path)), board="mps2-an505", out=tmp_path / "named", quantize="int8",
          compile=False, calibration_method=best["method"], bias_correction=best["bias_correction"])
    assert (tmp_path / "auto" / "model.pte").read_bytes() == (tmp_path / "named" / "model.pte").read_bytes()
    assert "chosen by `auto`" in (tmp_path / "auto" / "report.md").read_text()
    print_calibration(cal)
    assert f"calibration: {best['method']}" in capsys.readouterr().out


def test_recommendation_when_the_chosen_method_is_measurably_worse():
    from mcu_gen.quantize.calibration import compare_methods

    class Fake:  # what compare_methods measures, without a model: the rows decide
        pass

    import mcu_gen.quantize.calibration as calibration

    errors = {"histogram": 0.010, "minmax": 0.0095, "moving_average": 0.02, "percentile": 0.0050}
    before_convert, before_error = calibration._convert, calibration.output_error
    try:
        calibration._convert = lambda prepared, method, bias, samples: (method, bias)
        calibration.output_error = lambda model, module, samples: {
            "relative_rms_error": errors[model[0]] * (0.95 if model[1] else 1.0), "max_abs_error": 1.0}
        found, chosen_model, pick = compare_methods(Fake(), None, [], [], "histogram", False)
        assert found["recommended"]["method"] == "percentile" and chosen_model == pick == ("histogram", False)
        assert len(found["rows"]) == 8  # every method, with and without bias correction
        found, chosen_model, pick = compare_methods(Fake(), None, [], [], "auto", False)  # auto takes the best
        assert pick == chosen_model == ("percentile", True) and found["recommended"] is None
        errors["percentile"] = 0.0095  # only 5% better: not measurably
        found, _, _ = compare_methods(Fake(), None, [], [], "histogram", False)
        assert found["recommended"] is None
        errors.update(histogram=0.005, percentile=0.005)  # a tie: the first method, uncorrected...
        calibration.output_error = lambda model, module, samples: {
            "relative_rms_error": errors[model[0]], "max_abs_error": 1.0}
        assert compare_methods(Fake(), None, [], [], "auto", False)[2] == ("histogram", False)
        # ...unless bias correction is asked for: auto then chooses among the corrected variants
        assert compare_methods(Fake(), None, [], [], "auto", True)[2] == ("histogram", True)
    finally:
        calibration._convert, calibration.output_error = before_convert, before_error


def test_held_out_samples_only_without_test_inputs(tmp_path):
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.quantize import export_quantized

    spec = load_model_file(_model_file(tmp_path, n_calib=16, with_tests=True))
    program, _ = export_quantized(spec)
    assert program.meta["calibration"]["held_out"] == 0 and spec.held_out_inputs is None
    assert program.meta["calibration"]["compared_on"] == "2 test input(s)"
    small = tmp_path / "small"
    small.mkdir()
    spec = load_model_file(_model_file(small, n_calib=7))
    program, _ = export_quantized(spec)
    assert program.meta["calibration"]["held_out"] == 0 and program.meta["calibration"]["samples"] == 7


def test_a_bad_method_is_a_clear_error(tmp_path):
    from mcu_gen.errors import BuildError
    from mcu_gen.firmware.builder import build

    with pytest.raises(BuildError, match="calibration method 'mse': choose one of histogram, minmax, moving_average, percentile, auto"):
        build(str(_model_file(tmp_path)), out=tmp_path / "b", quantize="int8", compile=False, calibration_method="mse")
    from mcu_gen.cli import main

    with pytest.raises(SystemExit):
        main(["build", "--model", str(_model_file(tmp_path)), "--quantize", "int8", "--calibration-method", "mse"])


def test_the_fake_quantized_error_tracks_the_integer_reference(tmp_path):
    """The comparison measures PT2E's quantized graph; the device runs the integer lowering. On this
    model the two errors are within 20% of each other, so the ranking means something."""
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.quantize import export_quantized
    from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs
    from mcu_gen.reference.integer import run_int8_reference

    spec = load_model_file(_model_file(tmp_path, n_calib=16))
    program, gm = export_quantized(spec)
    held = spec.held_out_inputs
    cal = program.meta["calibration"]
    row = next(r for r in cal["rows"] if (r["method"], r["bias_correction"]) == (cal["method"], cal["bias_correction"]))
    rel = 0.0
    for (x,) in held:
        got = dequantize_outputs(program, run_int8_reference(program, list(quantize_inputs(program, (x.numpy(),)))))[0]
        want = spec.module(x).detach().numpy()
        rel += np.sqrt(np.mean((got - want) ** 2)) / np.sqrt(np.mean(want ** 2)) / len(held)
    assert rel == pytest.approx(row["relative_rms_error"], rel=0.2)
