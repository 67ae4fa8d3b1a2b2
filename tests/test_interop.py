"""Programs are interchangeable with ExecuTorch 1.5 (the executorch wheel is the oracle)."""
import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte
from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import load_model_file

executorch = pytest.importorskip("executorch", reason="executorch wheel not installed (scripts/setup.sh installs it)")

pytestmark = pytest.mark.interop


def _mnist():
    spec = load_model_file("examples/mnist/model.py")
    torch.manual_seed(1)
    inputs = [(torch.randn(1, 1, 28, 28),) for _ in range(2)]
    return spec, inputs


def test_mcu_gen_pte_runs_in_executorch_runtime():
    from executorch.runtime import Runtime

    spec, inputs = _mnist()
    program = export_model(spec, fuse=False)  # standard ATen .out operators only
    inplace_pass.plan_memory(program)
    data = pte.write(program)
    assert all(op.startswith("aten::") for op in program.operators)
    # Keep the buffer and the program alive while the method runs: ExecuTorch's
    # Program refers into them.
    et_program = Runtime.get().load_program(data)
    method = et_program.load_method("forward")
    for (x,) in inputs:
        got = method.execute([x])[0]
        want = spec.module(x).detach()
        assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    del method, et_program


def _executorch_pte(spec, path):
    from executorch.exir import to_edge_transform_and_lower

    ep = torch.export.export(spec.module.eval(), spec.example_inputs)
    buf = to_edge_transform_and_lower(ep).to_executorch().buffer
    path.write_bytes(buf)
    return path


def test_executorch_pte_runs_on_mcu_gen_firmware(tmp_path, qemu_tools):
    spec, inputs = _mnist()
    path = _executorch_pte(spec, tmp_path / "et_mnist.pte")
    ops = pte.read(path.read_bytes()).operators
    assert "aten::permute_copy.out" in ops and "aten::max_pool2d_with_indices.out" in ops  # ExecuTorch's own lowering
    np_inputs = [tuple(t.numpy() for t in one) for one in inputs]
    r = mcu_gen.run(pte_path=path, board="mps2-an505", out=tmp_path / "out", inputs=np_inputs)
    assert r.verified, r.max_abs_error
    for (x,), got in zip(inputs, r.outputs):
        want = spec.module(x).detach().numpy()
        assert np.abs(got[0] - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))
    # The program was embedded as ExecuTorch wrote it, byte for byte.
    assert (tmp_path / "out" / "model.pte").read_bytes() == path.read_bytes()
