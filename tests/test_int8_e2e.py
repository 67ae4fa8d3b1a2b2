"""int8 end to end on QEMU mps2-an505: every example quantized, built, run; the device's
outputs must equal the host integer reference bit for bit, with fp32 and with int8 I/O.
About 3 minutes on 2 cores (vww_mobilenet sends one 27 KB input over the emulated UART)."""
import json

import numpy as np
import pytest

from mcu_gen.device.runner import run

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "ad_autoencoder", "vww_mobilenet"]
# ExecuTorch 1.5.1's int8 Cortex-M arenas (DESIGN.md, M4/M33 figures) for the same models.
ET_INT8_ARENA = {"mnist": 6768, "kws_dscnn": 16000, "ic_resnet8": 49728, "ad_autoencoder": 3200,
                 "vww_mobilenet": 138240}


@pytest.mark.parametrize("io", ["float32", "int8"])
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_is_bit_exact_on_qemu(qemu_tools, tmp_path, name, io):
    r = run(f"examples/{name}/model.py", board="mps2-an505", quantize="int8", io=io, out=tmp_path,
            max_inputs=1 if name == "vww_mobilenet" else 2)
    assert r.bit_exact is True and r.verified
    assert r.quant_max_abs_error < 0.02
    if name != "ad_autoencoder":
        assert r.top1_agreement == 1.0
    else:
        assert r.top1_agreement is None
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["quantize"] == "int8" and report["io"] == io and report["fp32_fallback"] == []
    for t in report["inputs"] + report["outputs"]:
        assert t["dtype"] == io
        if io == "int8":
            assert t["scale"] > 0 and -128 <= t["zero_point"] <= 127
    # never worse than ExecuTorch's int8 arena; with int8 I/O the fp32 buffers are gone
    assert r.arena_bytes <= ET_INT8_ARENA[name]
    assert all(np.asarray(o).dtype == np.dtype(io) for one in r.outputs for o in one)


def test_cli_json_fields(qemu_tools, tmp_path, capsys):
    from mcu_gen.cli import main

    rc = main(["run", "--model", "examples/mnist/model.py", "--quantize", "int8", "--io", "int8", "--json",
               "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["bit_exact"] is True and out["io"] == "int8"
    assert 0 < out["quant_max_abs_error"] < 0.02 and out["top1_agreement"] == 1.0


def test_cli_int8_build_in_a_fresh_process(tmp_path, qemu_tools):
    """The command line on its own (nothing imported beforehand by other tests): quantizing
    must import whatever it needs itself."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "mcu_gen.cli", "build", "--board", "mps2-an505", "--model",
                        "examples/mnist/model.py", "--quantize", "int8", "--out", str(tmp_path), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["quantize"] == "int8" and report["arena_bytes"] > 0
    assert "Traceback" not in r.stderr
