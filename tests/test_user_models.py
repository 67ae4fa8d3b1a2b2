"""Issue 24's ordinary small models (a causal TCN, an audio front end, a token classifier, GroupNorm/
InstanceNorm, a bilinear U-Net, torch's own TransformerEncoderLayer): each builds, runs on QEMU and
verifies against PyTorch in fp32, and builds + verifies bit-exact with --quantize int8, on the M33
(mps2-an505) and the M55 (mps3-an547); with MCU_GEN_CMSIS_NN set, int8 on CMSIS-NN on both cores."""
import os

import pytest

import mcu_gen

MODELS = ["tcn", "frontend", "tokens", "norms", "unet", "transformer"]


@pytest.mark.qemu
@pytest.mark.parametrize("name", MODELS)
def test_user_model_verifies_in_fp32_on_qemu(name, tmp_path, qemu_tools):
    r = mcu_gen.run(f"tests/models_user/{name}.py", board="mps2-an505", out=tmp_path / name)
    assert r.verified, f"{name}: max abs error {r.max_abs_error} > {r.tolerance}"
    assert r.max_abs_error <= r.tolerance


@pytest.mark.qemu
@pytest.mark.parametrize("name", MODELS)
def test_user_model_int8_is_bit_exact_on_qemu(name, tmp_path, qemu_tools):
    r = mcu_gen.run(f"tests/models_user/{name}.py", board="mps2-an505", quantize="int8", out=tmp_path / name)
    assert r.verified, f"{name}: device differs from the integer reference"


# The M55 (mps3-an547: MVE, the other core of issue 24's "Done when"), portable kernels.
@pytest.mark.qemu
@pytest.mark.parametrize("name", MODELS)
def test_user_model_verifies_on_m55_fp32_and_int8(name, tmp_path, qemu_tools):
    r = mcu_gen.run(f"tests/models_user/{name}.py", board="mps3-an547", out=tmp_path / "fp32")
    assert r.verified and r.max_abs_error <= r.tolerance, f"{name}: max abs error {r.max_abs_error}"
    r = mcu_gen.run(f"tests/models_user/{name}.py", board="mps3-an547", quantize="int8", out=tmp_path / "int8")
    assert r.verified and r.bit_exact is True, f"{name}: device differs from the integer reference"


CMSIS = os.environ.get("MCU_GEN_CMSIS_NN")


@pytest.mark.qemu
@pytest.mark.skipif(not CMSIS, reason="MCU_GEN_CMSIS_NN is not set (path to CMSIS-NN sources)")
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
@pytest.mark.parametrize("name", MODELS)
def test_user_model_int8_is_bit_exact_on_cmsis_nn(name, board, tmp_path, qemu_tools):
    r = mcu_gen.run(f"tests/models_user/{name}.py", board=board, quantize="int8", out=tmp_path,
                    backend="cmsis-nn", cmsis_nn_path=CMSIS)
    assert r.verified and r.bit_exact is True, f"{name} on {board}: device differs from the integer reference"
