"""Advanced indexing in a model on QEMU mps2-an505 (tests/models_user/gather_mask.py): `h[:, idx]` with an
int64 index input (aten::index.Tensor_out), `h[mask] = 0` (aten::index_put.out) and rows by a constant
index; verified against PyTorch in fp32, and bit-exact with --quantize int8, where the indexing runs in
fp32 islands."""
import json

import pytest

import mcu_gen

MODEL = "tests/models_user/gather_mask.py"


def _operators(out):
    return {o["name"] for o in json.loads((out / "report.json").read_text())["operators"]}


@pytest.mark.qemu
def test_gather_mask_fp32_on_qemu(tmp_path, qemu_tools):
    r = mcu_gen.run(MODEL, board="mps2-an505", out=tmp_path / "fp32")
    assert r.verified and r.max_abs_error <= r.tolerance, (r.max_abs_error, r.tolerance)
    assert {"aten::index.Tensor_out", "aten::index_put.out"} <= _operators(tmp_path / "fp32")


@pytest.mark.qemu
def test_gather_mask_int8_fp32_islands_bit_exact_on_qemu(tmp_path, qemu_tools):
    r = mcu_gen.run(MODEL, board="mps2-an505", quantize="int8", out=tmp_path / "int8")
    assert r.verified and r.bit_exact, "device differs from the integer reference"
    assert {"aten::index.Tensor_out", "aten::index_put.out"} <= _operators(tmp_path / "int8")
