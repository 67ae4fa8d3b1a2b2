"""Ethos-U delegate, host side: partition, TOSA lowering, parity with the TOSA reference model,
Vela compile and the delegate blob inside the .pte.

Needs the optional `ethos-u` extra (tosa-tools, ethos-u-vela); skipped with the reason otherwise.
"""
from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tosa_serializer", reason="tosa-tools is not installed (pip install 'mcu-gen[ethos-u]')")
pytest.importorskip("ethosu.vela", reason="ethos-u-vela is not installed (pip install 'mcu-gen[ethos-u]')")

from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte  # noqa: E402
from mcu_gen.reference import ethosu_parity as parity  # noqa: E402
from mcu_gen.backends.ethosu.delegate import BACKEND_ID, delegate_program  # noqa: E402
from mcu_gen.backends.ethosu.partition import partition  # noqa: E402
from mcu_gen.backends.ethosu.targets import NpuError, get_npu  # noqa: E402
from mcu_gen.backends.ethosu.tosa_lowering import lower_subgraph  # noqa: E402
from mcu_gen.backends.ethosu.vela import parse_stream  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=None)
def int8_program(name: str, io: str = "int8"):
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.quantize import export_quantized

    program, _ = export_quantized(load_model_file(ROOT / "examples" / name / "model.py"), io=io)
    return program


@lru_cache(maxsize=None)
def delegated(name: str):
    program, report = delegate_program(int8_program(name), get_npu("ethos-u55-128"))
    inplace_pass.plan_memory(program)
    return program, report


def test_unknown_npu_is_rejected_with_the_choices():
    with pytest.raises(NpuError, match="unknown NPU configuration 'ethos-u99-1'.*ethos-u55-128"):
        get_npu("ethos-u99-1")


@pytest.mark.parametrize("name, n_ops", [("mnist", 5), ("kws_dscnn", 11)])
def test_int8_io_models_go_to_the_npu_whole(name, n_ops):
    p = int8_program(name)
    part = partition(p, get_npu())
    assert len(part.subgraphs) == 1
    assert part.subgraphs[0].instructions == list(range(n_ops))
    assert part.cpu == []
    roots = p.meta.get("aliases", {})  # an output may be a view of what the subgraph writes
    assert part.subgraphs[0].inputs == p.inputs
    assert part.subgraphs[0].outputs == [roots.get(o, o) for o in p.outputs]


def test_float_io_leaves_quantize_and_dequantize_on_the_cpu():
    p = int8_program("mnist", "float32")
    part = partition(p, get_npu())
    cpu_ops = [op for _, op, _ in part.cpu]
    assert "cortex_m::quantize_per_tensor.out" in cpu_ops and "cortex_m::dequantize_per_tensor.out" in cpu_ops
    assert all(r == "no Ethos-U lowering for this operator" for _, _, r in part.cpu)
    assert sum(len(sg.instructions) for sg in part.subgraphs) == 5


@pytest.mark.parametrize("name", ["mnist", "kws_dscnn"])
def test_tosa_reference_model_matches_the_integer_reference(name):
    p = int8_program(name)
    for sg in partition(p, get_npu()).subgraphs:
        graph = lower_subgraph(p, sg)
        res = parity.check(p, sg, graph, seed=1, trials=3)
        assert res.max_abs_diff <= res.tolerance, res
        assert res.max_abs_diff == 0  # measured: bit-exact, avg pool included, on these models


def test_delegate_blob_in_the_pte():
    p, report = delegated("mnist")
    assert [ins.op for ins in p.instructions] == ["delegate:0"]
    assert report["npu_operators"] == 5 and report["cpu_operators"] == 0
    sub = report["subgraphs"][0]
    assert sub["vela"]["cycles_total"] > 0 and sub["vela"]["nn_macs"] == 199072
    # Weights live only in the blob: no constants left in the program.
    assert p.constant_bytes() == 0
    data = pte.write(p)
    back = pte.read(data)
    d = back.meta["delegates"][0]
    assert d["id"] == BACKEND_ID
    assert dict(d["compile_specs"])["target"] == b"ethos-u55-128"
    assert d["processed"] == p.meta["delegates"][0]["processed"]
    assert back.instructions[0].op == "delegate:0"
    # The writer renumbers values (it drops unreferenced ones): compare the arguments' tensors.
    shapes = lambda prog: [(prog.tensor(a).shape, prog.tensor(a).dtype) for a in prog.instructions[0].args]  # noqa: E731
    assert shapes(back) == shapes(p) == [((1, 1, 28, 28), "int8"), ((sub["scratch_bytes"],), "uint8"), ((1, 10), "int8")]
    blocks = parse_stream(d["processed"])
    assert blocks["cmd_data"][:4] == b"COP1"
    scratch = struct.unpack("<I", blocks["scratch_size"])[0]
    assert scratch == sub["scratch_bytes"] == back.tensor(back.instructions[0].args[1]).nbytes
    n_in = struct.unpack_from("<i", blocks["inputs"])[0]
    shape = struct.unpack_from("<6i", blocks["inputs"], 4)
    assert n_in == 1 and shape == (1, 1, 1, 28, 28, 1)
    # The blob sits in its own 128-byte aligned segment, so the NPU reads it in place from flash.
    seg_base = struct.unpack_from("<Q", data, 24)[0]
    off = data.find(d["processed"][:64], seg_base)
    assert off >= seg_base and (off - seg_base) % 128 == 0
    # The arena holds Vela's scratch beside the delegate's input and output.
    assert back.arena_size >= scratch + 28 * 28 + 10


def test_other_npu_sizes_compile():
    p = int8_program("mnist")
    small, r_small = delegate_program(p, get_npu("ethos-u55-32"))
    big = delegated("mnist")[1]
    assert r_small["npu"] == "ethos-u55-32"
    assert r_small["vela_cycles_total"] > big["vela_cycles_total"]  # fewer MACs per cycle, more cycles
