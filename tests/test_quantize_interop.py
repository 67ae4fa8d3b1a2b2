"""Interop: ExecuTorch's own int8 Cortex-M flow (CortexMQuantizer + CortexMPassManager, as its
aot_arm_compiler.py does for cortex-m33) exports mnist and kws_dscnn; mcu-gen firmware runs those
.pte files on QEMU and every tensor the device computes equals ExecuTorch's Python reference (the
lowered edge program, run with the cortex_m operators' reference implementations in operators.py)
bit for bit: the outputs, and each instruction's result stepped through on the device.

ExecuTorch's Cortex-M backend imports tosa_serializer (research F1). `pip install tosa-tools` pins
numpy 2.1.3, and tosa-tools installs generic top-level packages (tests, runner, serializer, ...), so
it lives outside site-packages:

    python -m pip install --no-deps --target .venv/et-extras tosa-tools==2026.5.0

(the version executorch 1.5.1's [ethos-u] extra pins; ml_dtypes and semver are not needed for the
Cortex-M flow). This test appends that directory ($MCU_GEN_ET_EXTRAS, else .venv/et-extras) to
sys.path, after everything else, and is skipped, with the reason, only when it is absent.
"""
import copy
import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
ET_EXTRAS = Path(os.environ.get("MCU_GEN_ET_EXTRAS", ROOT / ".venv" / "et-extras"))
INSTALL = f"python -m pip install --no-deps --target {ET_EXTRAS} tosa-tools==2026.5.0"


def _et_cortex_m():
    if not (ET_EXTRAS / "tosa_serializer").is_dir():
        pytest.skip(f"ExecuTorch's Cortex-M backend needs tosa_serializer, not found in {ET_EXTRAS} "
                    f"(set MCU_GEN_ET_EXTRAS or run `{INSTALL}`)")
    if str(ET_EXTRAS) not in sys.path:
        sys.path.append(str(ET_EXTRAS))  # last: its generic package names must not shadow ours
    importlib.import_module("executorch.backends.cortex_m.passes.cortex_m_pass_manager")  # before operators (F2)
    return importlib.import_module("executorch.backends.cortex_m.quantizer.quantizer")


def _channels_last(x):
    return x.to(memory_format=torch.channels_last) if x.dim() == 4 else x


def export_with_executorch(spec):
    """(.pte bytes, ExecuTorch's lowered edge program) from its int8 Cortex-M (M33) pipeline."""
    qmod = _et_cortex_m()
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    model = spec.module.eval().to(memory_format=torch.channels_last)
    example = tuple(_channels_last(x) for x in spec.example_inputs)
    gm = torch.export.export(model, example).module(check_guards=False)  # F3
    prepared = prepare_pt2e(gm, qmod.CortexMQuantizer())
    for sample in spec.calibration_inputs:
        prepared(*[_channels_last(x) for x in sample])
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(torch.export.export(converted, example),
                                       compile_config=cortex_m_edge_compile_config())
    pm = CortexMPassManager(edge.exported_program(), target_config=CortexMTargetConfig(CortexM.M33))
    edge._edge_programs["forward"] = pm.transform()
    lowered = copy.deepcopy(edge.exported_program())  # to_executorch rewrites the graph in place
    return edge.to_executorch().buffer, lowered


def executorch_trace(lowered, inputs) -> tuple[list, list]:
    """(outputs, [(op, result)] of each cortex_m / dim_order operator in graph order) from ExecuTorch's
    Python reference."""
    gm = lowered.module(check_guards=False)
    steps = []

    class Recorder(torch.fx.Interpreter):
        def call_function(self, target, args, kwargs):
            result = super().call_function(target, args, kwargs)
            name = str(getattr(target, "_name", "") or getattr(target, "__name__", ""))
            if name.startswith(("cortex_m::", "dim_order_ops::")):
                steps.append((name, result.detach().contiguous().numpy()))
            return result

    with torch.no_grad():
        out = Recorder(gm).run(*[_channels_last(torch.from_numpy(x)) for x in inputs])
    out = out if isinstance(out, (tuple, list)) else [out]
    return [o.detach().contiguous().numpy() for o in out], steps


@pytest.mark.parametrize("name", ["mnist", "kws_dscnn"])
def test_executorch_int8_pte_runs_bit_exact(qemu_tools, tmp_path, name):
    _et_cortex_m()
    from mcu_gen.backends import kernels
    from mcu_gen.program import pte
    from mcu_gen.firmware.builder import build
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.reference import run_reference
    from mcu_gen.device.session import value_from_bytes

    spec = load_model_file(f"examples/{name}/model.py")
    data, lowered = export_with_executorch(spec)
    path = tmp_path / f"{name}_et_int8.pte"
    path.write_bytes(data)
    ops = pte.read(data).operators
    assert "dim_order_ops::_clone_dim_order.out" in ops  # channels-last -> contiguous before the classifier
    assert not kernels.select(ops, kernels.find_kernels()).missing

    result = build(pte_path=path, board="mps2-an505", out=tmp_path / "fw", debug=True)
    program = result.program
    samples = [tuple(x.numpy() for x in one) for one in list(spec.test_inputs)[:2] + list(spec.calibration_inputs)[:1]]
    with QemuSession(result.board, result.elf) as link:
        assert link.hello().program_id == result.program_id
        for k, one in enumerate(samples):
            want, steps = executorch_trace(lowered, one)
            # The whole inference: device outputs == ExecuTorch's reference == mcu-gen's integer reference.
            got, _ = link.infer(list(one))
            ours = run_reference(program, list(one))
            assert len(got) == len(want) == len(ours)
            for g, w, o in zip(got, want, ours):
                assert g.dtype == w.dtype == o.dtype
                assert np.array_equal(g.reshape(w.shape), w) and np.array_equal(o.reshape(w.shape), w)
            if k:
                continue
            # Each instruction, stepped on the device, against the same operator in ExecuTorch's graph.
            assert [op for op, _ in steps] == [ins.op.rsplit(".", 1)[0] for ins in program.instructions]
            link.write_inputs(list(one))
            device_index = pte.device_indices(program, result.pte_bytes)  # re-written for CMSIS-NN builds
            for i, (ins, (op, w)) in enumerate(zip(program.instructions, steps)):
                link.run_range(i, i + 1)
                out = ins.args[-1]
                raw = link.read_value(device_index[out], program.tensor(out).nbytes)
                g = value_from_bytes(program, out, raw)
                assert g.dtype == w.dtype and g.shape == w.shape, (i, op)
                assert np.array_equal(g, w), f"instruction {i} ({op}) differs from ExecuTorch's reference"
        link.exit(0)
