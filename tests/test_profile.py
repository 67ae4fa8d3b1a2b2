"""`mcu-gen profile` on QEMU: per-operator instruction counts measured on the device (RUN_PROFILED)
list every operator of kws_dscnn and add up to the whole inference within 2%."""
import json
import xml.etree.ElementTree as ET

import pytest

from mcu_gen.cli import main as cli_main
from mcu_gen.program.pte import read as read_pte


@pytest.mark.qemu
def test_profile_kws_dscnn_lists_every_operator_and_adds_up(tmp_path, capsys, qemu_tools):
    out = tmp_path / "kws"
    rc = cli_main(["profile", "--board", "mps2-an505", "--model", "examples/kws_dscnn/model.py", "--out", str(out),
                   "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["board"] == "mps2-an505" and r["unit"] == "instructions"
    program = read_pte((out / "model.pte").read_bytes())
    assert [o["op"] for o in r["ops"]] == [ins.op for ins in program.instructions]
    assert len(r["ops"]) >= 10
    assert all(o["count"] > 0 and o["backend"] and o["shape"] for o in r["ops"])
    assert sum(o["count"] for o in r["ops"]) == r["total"]
    assert r["whole"] > 1_000_000
    assert abs(r["total"] - r["whole"]) <= 0.02 * r["whole"], (r["total"], r["whole"])
    assert sum(o["share"] for o in r["ops"]) == pytest.approx(1.0)
    assert set(r["by_operator"]) == {ins.op for ins in program.instructions}
    # The chart: SVG (one bar per instruction) and PNG.
    svg = ET.parse(r["svg"]).getroot()
    assert len(svg.findall("{http://www.w3.org/2000/svg}rect")) == len(r["ops"])
    assert open(r["png"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.qemu
def test_profile_takes_the_kernel_options(tmp_path, capsys, qemu_tools):
    """`profile --kernels auto` profiles the build with generated layers, and says which ran."""
    out = tmp_path / "kws"
    rc = cli_main(["profile", "--board", "mps2-an505", "--model", "examples/kws_dscnn/model.py", "--out", str(out),
                   "--quantize", "int8", "--io", "int8", "--backend", "portable", "--kernels", "auto", "--json"])
    r = json.loads(capsys.readouterr().out)
    report = json.loads((out / "report.json").read_text())
    generated = {row["instruction"] for row in report["generated_kernels"]["layers"]}
    assert rc == 0 and len(generated) >= 9
    assert [o["backend"] == "generated" for o in r["ops"]] == [k in generated for k in range(len(r["ops"]))]
    assert {o["backend"] for o in r["ops"] if o["index"] not in generated} == {"portable"}
    # Under QEMU each operator also has the cycle model's estimate of its own instruction stream: on
    # the M33 every instruction costs at least a cycle, and the generated layers' loads cost more.
    assert r["cycle_model"] == "cortex-m33" and r["cycles_unavailable"] is None
    assert all(o["estimated_cycles"] >= o["count"] for o in r["ops"])
    assert r["estimated_total"] == sum(o["estimated_cycles"] for o in r["ops"])
    assert r["total"] < r["estimated_total"] < 2 * r["total"]


def test_table_format():
    from mcu_gen.dev.profile import OpProfile, ProfileResult, format_table

    r = ProfileResult("mps2-an505", "instructions", "m", [
        OpProfile(0, "mcu::conv2d.out", "portable", [1, 8, 4, 4], "float32", 750, 0.75),
        OpProfile(1, "mcu::linear.out", "cmsis-nn", [1, 10], "float32", 250, 0.25)], total=1000, whole=990)
    text = format_table(r)
    assert "mcu::conv2d.out" in text and "1x8x4x4 float32" in text and "750" in text and "75.0%" in text
    assert "cmsis-nn" in text and "101.01% of it" in text
    assert r.discrepancy == pytest.approx(10 / 990)
    assert "est. cycles" not in text and r.estimated_total is None
    r.ops[0].estimated_cycles, r.ops[1].estimated_cycles, r.cycle_model = 900, 300, "cortex-m33"
    text = format_table(r)
    assert "est. cycles" in text and "900" in text and "1,200" in text and r.estimated_total == 1200
