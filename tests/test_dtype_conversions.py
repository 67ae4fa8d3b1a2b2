"""`.long()`, `.int()`, `.bool()`, `.float()`, `.to(dtype)` on tensors computed at run time: ATen's _to_copy with
a dtype, lowered to aten::_to_copy.out (the out tensor carries the dtype), run on the host build against PyTorch."""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import load_model_file
from mcu_gen.firmware.host import run_on_host

MODEL = """
import torch


class Conversions(torch.nn.Module):
    def forward(self, x, ids):
        scaled = x * 4.0
        return (scaled.long(), (x > 0).float(), scaled.to(torch.int32), (ids * 3).float() + x, ids.bool(),
                scaled.int().to(torch.int8))


def model():
    return Conversions()


def example_inputs():
    return (torch.randn(3, 5), torch.arange(-7, 8, dtype=torch.int64).reshape(3, 5))
"""


def test_conversions_run_as_to_copy_and_match_pytorch(tmp_path):
    path = tmp_path / "conversions.py"
    path.write_text(MODEL)
    spec = load_model_file(str(path))
    program = export_model(spec)
    assert sum(ins.op == "aten::_to_copy.out" for ins in program.instructions) >= 6
    x = (torch.randn(3, 5) * 3).to(torch.float32)
    ids = torch.tensor([[0, 1, -2, 3, 4], [5, -6, 7, 0, 9], [10, 11, -12, 13, 0]])
    want = spec.module(x, ids)
    got = run_on_host(program, [x.numpy(), ids.numpy()])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
