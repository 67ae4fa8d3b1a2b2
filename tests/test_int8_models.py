"""int8 for models we did not tune the lowering for (issue 14): ExecuTorch's four MLPerf Tiny
models from the executorch wheel and eight small models with ordinary layers
(tests/models_int8/). Each must verify in fp32, and with --quantize int8 build, run on QEMU
mps2-an505 and equal the host integer reference bit for bit, with a bounded error against
PyTorch fp32. Operators without an int8 kernel become fp32 islands, each reported with its
reason. With MCU_GEN_CMSIS_NN set, the same models run on CMSIS-NN (M33 and M55)."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

from mcu_gen.device.runner import run

MODELS_DIR = Path(__file__).parent / "models_int8"
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.py"))
# 27 KB per input over the emulated UART: one input only
BIG = {"mlperf_mobilenet_v1_025"}
# Models whose every operator has an int8 kernel: no island allowed.
ALL_INT8 = {"mlperf_ds_cnn", "mlperf_deep_autoencoder", "mlperf_resnet8", "mlperf_mobilenet_v1_025", "data_movement",
            "tokens_int8"}
ERROR_BOUND = {"two_in_two_out": 0.25}
CLASSIFIERS = {"chunk_same_pad", "mlperf_resnet8", "mlperf_mobilenet_v1_025", "mlperf_ds_cnn", "conv1d_audio", "se_hardswish",
               "cat_branches", "odd_convs", "attention", "activations"}


def test_the_set_is_complete():
    assert len(MODELS) >= 13, MODELS


@pytest.mark.parametrize("name", MODELS)
def test_int8_bit_exact_on_qemu(qemu_tools, tmp_path, name):
    model = MODELS_DIR / f"{name}.py"
    n = 1 if name in BIG else 2
    fp = run(str(model), board="mps2-an505", out=tmp_path / "fp32", max_inputs=n)
    assert fp.verified, f"{name} must verify in fp32 first"
    r = run(str(model), board="mps2-an505", quantize="int8", out=tmp_path / "int8", max_inputs=n)
    assert r.bit_exact is True and r.verified
    report = json.loads((tmp_path / "int8" / "report.json").read_text())
    assert report["quantize"] == "int8"
    for island in report["fp32_fallback"]:
        assert island["reason"] and island["op"] and island["kernels"], island
    if name in ALL_INT8:
        assert report["fp32_fallback"] == [], report["fp32_fallback"]
    # int8 stays close to fp32 (outputs are O(1); log_softmax's reach -5)
    assert r.quant_max_abs_error < ERROR_BOUND.get(name, 0.1), r.quant_max_abs_error
    if name in CLASSIFIERS and name not in BIG:
        assert r.top1_agreement is not None and r.top1_agreement >= 0.5


CMSIS = os.environ.get("MCU_GEN_CMSIS_NN")


@pytest.mark.skipif(not CMSIS, reason="MCU_GEN_CMSIS_NN is not set (path to CMSIS-NN sources)")
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
@pytest.mark.parametrize("name", MODELS)
def test_int8_bit_exact_on_cmsis_nn(qemu_tools, tmp_path, name, board):
    r = run(str(MODELS_DIR / f"{name}.py"), board=board, quantize="int8", out=tmp_path, max_inputs=1,
            backend="cmsis-nn", cmsis_nn_path=CMSIS)
    assert r.bit_exact is True and r.verified
