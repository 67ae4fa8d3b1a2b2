"""The operator tests' one check: export a PyTorch function with mcu-gen, run it on the host build of
the portable kernels, compare every output with PyTorch eager (ints and bools exact, floats within a
tolerance, NaN where PyTorch has it). Each call compiles one native runner, so a test puts many
operators into one function."""
from __future__ import annotations

import numpy as np
import torch

from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import ModelSpec
from mcu_gen.firmware.host import run_on_host


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def check(fn, *inputs, rtol=1e-5, atol=1e-5):
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn).eval()
    want = module(*inputs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    program = export_model(ModelSpec(module, tuple(inputs)))
    got = run_on_host(program, [x.numpy() for x in inputs])
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.detach().numpy()
        assert g.shape == w.shape, (k, g.shape, w.shape)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"output {k}")
