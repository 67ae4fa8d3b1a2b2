"""`mcu-gen eval` on QEMU with a real dataset (issue 28): a small CNN trained in about a second on
scikit-learn's handwritten digits (examples/digits/model.py, 8x8 images, shipped inside sklearn),
quantized to int8 on 32 training images, then the whole test split (360 images) through the device:
int8 accuracy within 1 point of fp32, every device output identical to the host integer reference,
a confusion matrix with the ten classes. On mps2-an505 (Cortex-M33) and rv32-virt (RV32IMAC).

Also: the Python API with a module and no model file (a script) and
run's in-distribution inputs for a model without test_inputs()."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the digits data set ships with scikit-learn (pyproject's test extra)")

from tests.test_eval_data import _png_size, svg_class_labels  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DIGITS = ROOT / "examples" / "digits" / "model.py"


@pytest.fixture(scope="module")
def digits_npz(tmp_path_factory):
    path = tmp_path_factory.mktemp("digits") / "digits_test.npz"
    subprocess.run([sys.executable, str(DIGITS), str(path)], check=True, cwd=ROOT, capture_output=True)
    return path


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an505", "rv32-virt"])
def test_digits_int8_on_the_device_is_as_accurate_as_fp32(qemu_tools, tmp_path, digits_npz, board, capsys):
    from mcu_gen.cli import main

    out = tmp_path / "eval"
    code = main(["eval", "--board", board, "--model", str(DIGITS), "--data", str(digits_npz), "--quantize", "int8",
                 "--out", str(out), "--json", "--backend", "portable"])
    r = json.loads(capsys.readouterr().out)
    assert code == 0 and r["verified"] is True
    assert r["n_samples"] == 360 and r["n_classes"] == 10 and r["top_k"] == 5 and r["io"] == "int8"
    acc = r["accuracy"]
    fp32, int8, dev = acc["fp32_host"]["top1"], acc["int8_host"]["top1"], acc["device"]["top1"]
    assert fp32 > 0.93, "the digits CNN did not train"
    assert abs(int8 - fp32) <= 0.01 and dev == int8
    assert r["agreement"] == 1.0 and r["top1_agreement"] == 1.0 and r["mismatches"] == []  # bit-exact, all 360
    assert np.sum(r["confusion"]) == 360 and np.trace(r["confusion"]) == round(dev * 360)
    assert len(acc["device"]["per_class"]) == 10 and min(acc["device"]["per_class"]) > 0.8
    w, h = _png_size((out / "confusion.png").read_bytes())
    assert w > 300 and h > 300
    labels, _ = svg_class_labels(out / "confusion.svg")
    assert {str(c) for c in range(10)} <= labels
    assert json.loads((out / "eval.json").read_text())["accuracy"] == acc
    assert "| device |" in (out / "eval.md").read_text()
    # samples/s is printed, not asserted: it is wall-clock time on a shared machine (docs/testing_on_device.md)
    print(f"{board}: {r['samples_per_second']:.1f} samples/s, fp32 {fp32:.2%}, int8 {int8:.2%}")


SCRIPT = '''
import json, sys
import numpy as np, torch
from torch import nn
import mcu_gen

torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 3))
g = torch.Generator().manual_seed(1)
calibration = [(torch.rand(1, 1, 8, 8, generator=g),) for _ in range(16)]
x = torch.rand(24, 1, 8, 8, generator=g)
with torch.no_grad():
    y = net(x).argmax(1)
e = mcu_gen.eval(net, example_inputs=(x[:1],), calibration=calibration, data=(x.numpy(), y.numpy()),
                 quantize="int8", out=sys.argv[1], backend="portable")
b = mcu_gen.build(torch.export.export(net.eval(), (x[:1],)), board="mps2-an505", out=sys.argv[1] + "-ep",
                  compile=False)
print(json.dumps({"eval": e.to_json(), "ep_model": b.report["model"], "ep_ops": len(b.report["operators"])}))
'''


@pytest.mark.qemu
def test_python_api_takes_a_module_in_a_script_without_a_model_file(qemu_tools, tmp_path):
    script = tmp_path / "train_and_check.py"
    script.write_text(SCRIPT)
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    e = got["eval"]
    assert e["verified"] and e["agreement"] == 1.0 and e["n_samples"] == 24 and e["n_classes"] == 3
    assert e["accuracy"]["fp32_host"]["top1"] == 1.0  # the labels are the fp32 model's own predictions
    assert e["accuracy"]["device"]["top1"] == e["accuracy"]["int8_host"]["top1"] >= 0.8
    assert (tmp_path / "out" / "confusion.svg").is_file() and got["ep_model"] == "exported" and got["ep_ops"] >= 3


@pytest.mark.qemu
def test_run_without_test_inputs_measures_int8_error_in_distribution(qemu_tools, tmp_path):
    """A super-resolution-like model (convs, tanh, pixel shuffle, clamp to [0, 1]) calibrated on [0, 1]
    images and without test_inputs(): run verifies on held-out calibration samples, and the error it
    reports is the in-distribution one (the issue: standard-normal defaults reported 0.33 on an
    output of range [0, 0.19])."""
    import torch

    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.device.runner import run
    from mcu_gen.quantize import export_quantized
    from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs
    from mcu_gen.reference.integer import run_int8_reference

    model = tmp_path / "superres.py"
    model.write_text('''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 4, 3, padding=1)
    def forward(self, x):
        y = torch.tanh(self.c1(x))
        y = nn.functional.pixel_shuffle(self.c2(y), 2)
        return torch.clamp(y * 0.5 + 0.1, 0.0, 1.0)

def model():
    torch.manual_seed(0)
    return Net().eval()

def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(1, 1, 8, 8, generator=g),) for _ in range(n)]

def example_inputs():
    return _inputs(1, 1)[0]

def calibration_inputs():
    return _inputs(3, 24)
''')
    r = run(str(model), board="mps2-an505", quantize="int8", out=tmp_path / "fw", cycles=False, backend="portable")
    assert r.bit_exact and r.inputs_used == "3 held-out calibration samples (not calibrated on)"
    assert r.calibration["held_out"] == 3 and r.calibration["samples"] == 21
    # The same build on fresh in-distribution images, and on standard-normal ones (the old default):
    spec = load_model_file(model)
    program, _ = export_quantized(spec)

    def worst(inputs):
        err = 0.0
        for (x,) in inputs:
            got = dequantize_outputs(program, run_int8_reference(program, list(quantize_inputs(program, (x.numpy(),)))))
            with torch.no_grad():
                want = spec.module(x).numpy()
            err = max(err, float(np.max(np.abs(got[0] - want))))
        return err

    g = torch.Generator().manual_seed(9)
    fresh = worst([(torch.rand(1, 1, 8, 8, generator=g),) for _ in range(8)])
    normal = worst([(torch.randn(1, 1, 8, 8, generator=g),) for _ in range(8)])
    assert r.quant_max_abs_error <= 2.0 * fresh + 1e-3, (r.quant_max_abs_error, fresh)
    assert normal > 3.0 * r.quant_max_abs_error  # what standard-normal defaults would have reported
