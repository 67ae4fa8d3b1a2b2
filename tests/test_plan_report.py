"""The plan as text, SVG and PNG; `mcu-gen inspect --plan`."""
from __future__ import annotations

import re

import pytest

from mcu_gen.plan import inplace_pass, picture as plan_report
from mcu_gen.program import pte
from mcu_gen.cli import main
from mcu_gen.program.ir import Instruction, Program


def _program():
    p = Program()
    x = p.add_tensor((1, 64), "float32")
    a = p.add_tensor((1, 256), "float32")
    b = p.add_tensor((1, 256), "float32")
    c = p.add_tensor((1, 8), "float32")
    p.inputs.append(x)
    p.outputs.append(c)
    p.instructions += [Instruction("t::op.out", [x, x, a, a], "model.py:3: fc1"),
                       Instruction("t::op.out", [a, a, b, b], "model.py:4: fc2"),
                       Instruction("t::op.out", [b, b, c, c], "model.py:5: fc3")]
    from mcu_gen.backends.kernels import Kernel

    inplace_pass.plan_memory(p, available={"t::op.out": Kernel("t::op.out", "f", "TTOO", None)})
    return p


def test_peak_ops_name_the_instruction_that_sets_the_arena():
    p = _program()
    assert p.arena_size == 2048 and p.lower_bound == 2048
    (peak,) = plan_report.peak_ops(p)
    assert peak["step"] == 1 and peak["source"] == "model.py:4: fc2" and peak["live_bytes"] == 2048


def test_text_and_svg_show_every_tensor():
    p = _program()
    txt = plan_report.text(p)
    assert "arena 2,048 B (1.00x), layer-wise lower bound 2,048 B" in txt
    assert "step   1 t::op.out: 2,048 B live" in txt
    doc = plan_report.svg(p)
    assert doc.startswith("<svg") and doc.rstrip().endswith("</svg>")
    assert len(re.findall(r"<g><title>", doc)) == 4  # one box per arena tensor
    assert "arena 2,048 B" in doc


def test_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = plan_report.write_png(_program(), tmp_path / "plan.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_inspect_plan_prints_and_draws(tmp_path, capsys):
    p = Program()
    x = p.add_tensor((4, 4), "float32")
    y = p.add_tensor((4, 4), "float32")
    p.inputs.append(x)
    p.outputs.append(y)
    p.instructions.append(Instruction("aten::relu.out", [x, y, y]))
    inplace_pass.plan_memory(p)
    f = tmp_path / "m.pte"
    f.write_bytes(pte.write(p))
    svg = tmp_path / "plan.svg"
    assert main(["inspect", str(f), "--plan", "--plan-svg", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "layer-wise lower bound 128 B" in out and "peak at:" in out
    assert svg.read_text().startswith("<svg")
