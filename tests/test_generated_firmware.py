"""Generated int8 kernels on QEMU (Cortex-M33, mps2-an505; the DSP inline assembly runs here),
without CMSIS-NN (CI has none): the examples must stay bit-exact with the host integer reference,
run fewer instructions than the library kernels, and report which layers are generated.
With CMSIS-NN (MCU_GEN_CMSIS_NN) the same for the CMSIS-NN backend, else that test is skipped.
"""
from __future__ import annotations

import json
import os

import pytest

from mcu_gen.device.runner import run

EXAMPLES = "examples/{}/model.py"


def _run(tmp_path, name, kernels, backend="portable", **kw):
    return run(EXAMPLES.format(name), board="mps2-an505", out=tmp_path / f"{name}-{backend}-{kernels}", quantize="int8",
               io="int8", backend=backend, kernels=kernels, n_random=1, **kw)


@pytest.mark.parametrize("name", ["kws_dscnn", "mnist"])
def test_generated_kernels_are_bit_exact_and_faster(qemu_tools, tmp_path, name):
    gen = _run(tmp_path, name, "auto")
    lib = _run(tmp_path, name, "library")
    assert gen.verified and gen.bit_exact, gen
    assert lib.verified and lib.bit_exact, lib
    report = json.loads((tmp_path / f"{name}-portable-auto" / "report.json").read_text())
    layers = report["generated_kernels"]["layers"]
    assert layers and report["generated_kernels"]["prewidened_weight_bytes"] > 0
    assert all(report["operators"][l["instruction"]]["backend"] == "generated" for l in layers)
    assert "Generated kernels" in (tmp_path / f"{name}-portable-auto" / "report.md").read_text()
    assert gen.instructions_per_inference < lib.instructions_per_inference
    lib_report = json.loads((tmp_path / f"{name}-portable-library" / "report.json").read_text())
    assert lib_report["generated_kernels"]["layers"] == []


def test_generated_kernels_with_cmsis_nn(qemu_tools, tmp_path):
    root = os.environ.get("MCU_GEN_CMSIS_NN")
    if not root:
        pytest.skip("CMSIS-NN not given (MCU_GEN_CMSIS_NN): the generated kernels beside CMSIS-NN are not tested")
    gen = _run(tmp_path, "kws_dscnn", "auto", backend="cmsis-nn", cmsis_nn_path=root)
    assert gen.verified and gen.bit_exact
    assert gen.instructions_per_inference < 4_600_000  # issue 17's M33 target for KWS


def test_kernels_generated_needs_a_dsp_or_mve_core(tmp_path):
    from mcu_gen.errors import BuildError
    from mcu_gen.firmware.builder import build

    with pytest.raises(BuildError, match="no generated kernels"):
        build(EXAMPLES.format("mnist"), board="rv32-virt", out=tmp_path / "rv32", quantize="int8", io="int8",
              backend="portable", kernels="generated", compile=False)
