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


def test_generated_adds_on_the_m33(qemu_tools, tmp_path):
    """The DSP generator's adds (tests/test_generated_kernels.py's cases: all int8 pairs with ties at every
    stage, a left shift, negative multipliers, in place over either operand) in one program on QEMU
    mps2-an505: all generated, bit-exact with the integer reference, faster than the portable kernel."""
    import sys

    import numpy as np

    from mcu_gen.program import pte

    sys.path.insert(0, os.path.dirname(__file__))
    from test_generated_kernels import ADD_CASES, add_program
    from test_generated_mve import merged

    p = merged([add_program(shape, params, chain=chain) for params, shape, chain in ADD_CASES])
    path = tmp_path / "adds.pte"
    path.write_bytes(pte.write(p))
    rng = np.random.default_rng(9)
    x, y = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    inputs = []
    for i in p.inputs:
        shape = p.tensor(i).shape
        inputs.append((x if not len(inputs) % 2 else y).astype(np.int8) if shape == (256, 256)
                      else rng.integers(-128, 128, shape).astype(np.int8))
    gen = run(pte_path=path, board="mps2-an505", out=tmp_path / "gen", inputs=[inputs], kernels="generated",
              backend="portable")
    assert gen.verified and gen.bit_exact, gen
    report = json.loads((tmp_path / "gen" / "report.json").read_text())
    layers = report["generated_kernels"]["layers"]
    assert [l["instruction"] for l in layers] == list(range(len(p.instructions))), report["generated_kernels"]
    lib = run(pte_path=path, board="mps2-an505", out=tmp_path / "lib", inputs=[inputs], kernels="library",
              backend="portable")
    assert lib.verified and lib.bit_exact
    assert gen.instructions_per_inference < 0.8 * lib.instructions_per_inference
    print(f"adds on the M33: generated {gen.instructions_per_inference:,}, portable {lib.instructions_per_inference:,}")


@pytest.mark.parametrize("board", ["mps2-an505", "mps2-an386"])
def test_every_generated_layer_case_runs_its_dsp_assembly_on_qemu(qemu_tools, tmp_path, board):
    """Every layer case (CASES) of tests/test_generated_kernels.py (whose host runs compile the plain C
    definitions of the DSP instructions) in one program on the Cortex-M33 and the Cortex-M4: each
    layer generated (the inline/stand-alone assembly: gemm_asm, the depthwise blocks, SMMLAR), and
    every output bit-exact with the host integer reference on its own random input."""
    import sys

    from mcu_gen.program import pte

    sys.path.insert(0, os.path.dirname(__file__))
    from test_generated_kernels import CASES, case_program
    from test_generated_mve import merged

    progs, xs = zip(*(case_program(kind, shape) for kind, shape in CASES))
    p = merged(list(progs))
    path = tmp_path / "cases.pte"
    path.write_bytes(pte.write(p))
    r = run(pte_path=path, board=board, out=tmp_path / "gen", inputs=[list(xs)], kernels="generated",
            backend="portable")
    assert r.verified and r.bit_exact, r
    report = json.loads((tmp_path / "gen" / "report.json").read_text())
    layers = report["generated_kernels"]["layers"]
    assert [l["instruction"] for l in layers] == list(range(len(p.instructions))), report["generated_kernels"]
    kinds = {l["kind"].rstrip("0123456789x") for l in layers}
    assert kinds >= {"pointwise", "depthwise", "conv", "linear"}, kinds


def _all_generated_bit_exact(model: str, out, n_layers: int) -> str:
    """Runs `model` int8 on QEMU mps2-an505 (portable backend, generated kernels): bit-exact, its n_layers layers
    all generated, none skipped; returns the generated source."""
    r = run(model, board="mps2-an505", out=out, quantize="int8", io="int8", backend="portable", kernels="auto",
            n_random=1)
    assert r.verified and r.bit_exact, r
    report = json.loads((out / "report.json").read_text())
    assert len(report["generated_kernels"]["layers"]) == n_layers and not report["generated_kernels"]["skipped"]
    return (out / "firmware" / "kernels" / "generated_kernels.cpp").read_text()


def test_two_row_gemm_cases_on_the_m33(qemu_tools, tmp_path):
    """tests/models_int8/gemm_pairs.py on QEMU mps2-an505: every layer generated, two-row GEMM functions
    with a last block of 4 (K 16, 12, 20, 132 and the 3x3 convolution's 324), bit-exact."""
    source = _all_generated_bit_exact("tests/models_int8/gemm_pairs.py", tmp_path / "pairs", 5)
    for fn in ("k16_n12_t4", "k132_n36_t4", "k324_n20_t4"):
        assert f"mcu_gen_gemm_{fn}_" in source and f".Lpair_mcu_gen_gemm_{fn}_" in source
    assert ".Lsub8_mcu_gen_gemm_k324_n20_t4_" in source  # K >= PAIR_LOOP_K: one loop over the sub-blocks
    assert ".Lsub8_mcu_gen_gemm_k132_n36_t4_" not in source  # K 132 < PAIR_LOOP_K: unrolled


def test_conv_cols_on_the_m33(qemu_tools, tmp_path):
    """tests/models_int8/conv_cols.py on QEMU mps2-an505: the convolutions of Cin % 4 == 0 and even output width
    on widened input columns (conv_cols: stride 1 and 2, in place over the ring of rows, a last block of 4, Cin 20,
    no padding, 5x5, chunks that do not divide the output width), the one of odd output width on gathered windows;
    every layer generated, bit-exact."""
    source = _all_generated_bit_exact("tests/models_int8/conv_cols.py", tmp_path / "cols", 7)
    calls = [l for l in source.splitlines() if l.lstrip().startswith(("conv_cols<", "conv_stream<"))]
    assert [l.lstrip().split("<")[0] for l in calls] == ["conv_cols"] * 5 + ["conv_stream"], calls
    assert sum("RingRows" in l for l in calls[:5]) >= 2  # in place: rows read back from the ring
    assert "mcu_gen_gemm_cols_k144_n20_t4_c16_kw3_s2_" in source and "mcu_gen_gemm_cols_k300_n8_c12_kw5_s1_" in source
    assert ".Lsub8_mcu_gen_gemm_cols_k300_" in source  # K >= PAIR_LOOP_K: the looped sub-blocks
