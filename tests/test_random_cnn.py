"""Random int8 CNNs (mcu_gen/dev/random_cnn.py, the networks of bench/sweep_random_cnn.py) on QEMU with the
default kernels: a few fixed seeds on the Cortex-M33 (DSP assembly) and the Cortex-M55 (MVE), each run bit-exact
with the host integer reference, with generated layers in it; the longer sweep is the bench script's."""
from __future__ import annotations

import json
import runpy

import pytest

import mcu_gen
from mcu_gen.dev import random_cnn

# Seeds whose networks take many of the generated paths: strided and padded stems, depthwise-separable pairs,
# 3x3 convolutions in place, residual adds, pools, layers with odd channel counts (some on the library kernels).
SEEDS = [101, 105, 109]


def test_a_seed_always_gives_the_same_network():
    assert random_cnn.model_source(7) == random_cnn.model_source(7)
    assert random_cnn.spec(7) != random_cnn.spec(8)
    described = [random_cnn.describe(s) for s in range(40)]
    assert len(set(described)) == 40
    assert any("dwconv" in d for d in described) and any("res" in d for d in described)
    assert any("dwconv5x5" in d for d in described)  # the DSP cores generate them, the M55 leaves them to the library


def test_the_model_file_runs_on_its_own(tmp_path):
    import torch

    path = tmp_path / "cnn.py"
    path.write_text(random_cnn.model_source(105))
    m = runpy.run_path(str(path))
    net, x = m["model"](), m["example_inputs"]()
    assert tuple(x[0].shape) == (1, *random_cnn.spec(105)["input"])
    with torch.no_grad():
        y = net(*x)
    assert tuple(y.shape) == (1, random_cnn.spec(105)["classes"])
    assert len(m["calibration_inputs"]()) == 8


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547"])
@pytest.mark.parametrize("seed", SEEDS)
def test_random_cnn_is_bit_exact_on_the_generated_kernels(seed, board, tmp_path, qemu_tools):
    path = tmp_path / f"cnn_{seed}.py"
    path.write_text(random_cnn.model_source(seed))
    r = mcu_gen.run(str(path), board=board, out=tmp_path / "out", quantize="int8", io="int8")
    assert r.verified and r.bit_exact, f"seed {seed} ({random_cnn.describe(seed)}) on {board}: {r}"
    kernels = json.loads((tmp_path / "out" / "report.json").read_text())["generated_kernels"]
    assert len(kernels["layers"]) >= 3, kernels
    assert all(s["reason"] for s in kernels["skipped"]), kernels["skipped"]
