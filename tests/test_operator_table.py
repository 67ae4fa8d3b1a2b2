"""docs/operators.md is the operator table the registries give (`mcu-gen kernels --markdown`), and the table
says what each operator does in an int8 program, on CMSIS-NN and in generated code."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcu_gen.backends import operator_table
from mcu_gen.backends.kernels import find_kernels

ROOT = Path(__file__).resolve().parent.parent


def test_docs_operators_md_is_the_generated_table():
    doc = (ROOT / "docs" / "operators.md").read_text()
    assert doc == operator_table.markdown(), "docs/operators.md is out of date: mcu-gen kernels --markdown > docs/operators.md"


def test_every_kernel_is_a_row_with_what_int8_programs_do():
    rows = {r.op: r for r in operator_table.rows()}
    assert set(rows) == set(find_kernels())
    assert rows["cortex_m::quantized_conv2d.out"].int8 == "int8 kernel"
    assert rows["cortex_m::quantized_conv2d.out"].cmsis_nn and rows["cortex_m::quantized_conv2d.out"].generated
    assert rows["cortex_m::quantize_per_tensor.out"].int8 == "int8 boundary"
    assert rows["mcu::max_pool2d.out"].int8 == "int8 kernel"  # int8_ops/pool.py (the fp32 form: mcu::)
    assert rows["aten::sigmoid.out"].int8 == "int8 table"       # a 256-entry table
    assert rows["aten::index.Tensor_out"].int8 == "fp32 island"
    assert set(rows["aten::index.Tensor_out"].dtypes) >= {"float32", "int64", "bool"}
    assert not rows["aten::abs.out"].cmsis_nn and not rows["aten::abs.out"].generated


def test_cli_prints_the_same_table():
    out = subprocess.run([sys.executable, "-m", "mcu_gen", "kernels"], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    assert out == operator_table.text()
    md = subprocess.run([sys.executable, "-m", "mcu_gen", "kernels", "--markdown"], capture_output=True, text=True,
                        check=True, cwd=ROOT).stdout
    assert md == operator_table.markdown() and "## Not run, and why" in md and "aten::nonzero" in md
