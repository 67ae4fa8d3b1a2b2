"""End to end on the emulated Cortex-M33: every example builds, boots in QEMU and matches PyTorch."""
import json

import numpy as np
import pytest

import mcu_gen
from mcu_gen.cli import main as cli_main

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"]


@pytest.mark.qemu
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_verified_on_mps2_an505(name, tmp_path, qemu_tools):
    r = mcu_gen.run(f"examples/{name}/model.py", board="mps2-an505", out=tmp_path / name)
    assert r.verified, f"max abs error {r.max_abs_error} > {r.tolerance}"
    assert r.reference == "pytorch"
    assert r.n_inferences >= 2
    assert r.max_abs_error <= r.tolerance
    # Instruction counts under -icount are deterministic: every inference of a
    # static graph executes the same instructions.
    assert r.instructions_per_inference > 0
    assert max(r.instructions) - min(r.instructions) <= max(r.instructions) // 1000
    assert r.arena_bytes >= r.arena_lower_bound_bytes > 0
    rep = json.loads((tmp_path / name / "report.json").read_text())
    for key in ("board", "arena_bytes", "arena_lower_bound_bytes", "pte_bytes", "flash_bytes", "ram_bytes", "operators"):
        assert key in rep
    assert rep["pte_bytes"] == (tmp_path / name / "model.pte").stat().st_size
    assert rep["flash_bytes"] > rep["pte_bytes"]
    assert rep["ram_bytes"] >= rep["arena_bytes"]
    assert all({"name", "backend", "dtype"} <= op.keys() for op in rep["operators"])
    assert (tmp_path / name / "firmware" / "CMakeLists.txt").exists()
    assert (tmp_path / name / "firmware" / "platformio.ini").exists()
    assert (tmp_path / name / "report.md").read_text().startswith("# mcu-gen build")


@pytest.mark.qemu
def test_cli_run_json(tmp_path, capsys, qemu_tools):
    rc = cli_main(["run", "--board", "mps2-an505", "--model", "examples/mnist/model.py", "--out", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("board", "verified", "max_abs_error", "arena_bytes", "pte_bytes", "flash_bytes", "ram_bytes",
                "instructions_per_inference", "n_inferences"):
        assert key in out
    assert out["verified"] is True and out["board"] == "mps2-an505"


def test_cli_boards_lists_the_emulated_board(capsys):
    assert cli_main(["boards"]) == 0
    text = capsys.readouterr().out
    assert "mps2-an505" in text and "cortex-m33" in text and "qemu" in text


@pytest.mark.qemu
def test_inspect_shows_operators_plan_and_sizes(tmp_path, capsys, qemu_tools):
    mcu_gen.build("examples/mnist/model.py", board="mps2-an505", out=tmp_path, compile=False)
    assert cli_main(["inspect", str(tmp_path / "model.pte"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["operators"] == ["mcu::conv2d_max_pool2d.out", "mcu::linear.out"]
    assert info["arena_bytes"] >= info["arena_lower_bound_bytes"]
    assert info["pte_bytes"] == (tmp_path / "model.pte").stat().st_size
    # Weights are constants (in flash), activations live in the arena.
    places = {t["place"].split("+")[0] for t in info["tensors"]}
    assert places == {"constant", "arena"}


def test_mismatch_is_reported_not_verified():
    from mcu_gen.device.runner import verify_outputs

    err, tol, ok = verify_outputs([np.array([1.0, 2.0005])], [np.array([1.0, 2.0])])
    assert not ok and err == pytest.approx(5e-4, rel=1e-3) and tol == pytest.approx(2e-4)
    err, tol, ok = verify_outputs([np.array([1.0, 2.00001])], [np.array([1.0, 2.0])])
    assert ok
