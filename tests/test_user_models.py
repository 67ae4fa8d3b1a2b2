"""Issue 24's ordinary small models (a causal TCN, an audio front end, a token classifier, GroupNorm/
InstanceNorm, a bilinear U-Net, torch's own TransformerEncoderLayer): each builds, runs on QEMU
mps2-an505 and verifies against PyTorch in fp32, and builds + verifies bit-exact with --quantize int8."""
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
