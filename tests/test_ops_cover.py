"""Issue 24's OpInfo cases ExecuTorch's portable runtime passes, on mcu-gen's host runner against
PyTorch eager: integer clamp (the clamped indices of _unsafe_masked_index[_put_accumulate]), ..."""
from __future__ import annotations

import numpy as np
import torch

from tests.op_check import check
from tests.test_ops_reduce import Builder, sample


def test_clamp_integer_tensors():
    """clamp.out on integer tensors with int bounds stays integer; a float bound computes in float."""
    bld = Builder()
    for dtype in ("int64", "int32", "int8", "uint8", "int16"):
        xa = sample((3, 7), dtype) if dtype != "uint8" else np.arange(21, dtype=np.uint8).reshape(3, 7) * 7
        x = bld.input(xa, dtype)
        tx = torch.from_numpy(xa)
        for lo, hi in ((0, 4), (-5, None), (None, 3), (9, 2)):
            want = torch.clamp(tx, lo, hi)
            args = [x, bld.scalar("none") if lo is None else bld.scalar("int", lo),
                    bld.scalar("none") if hi is None else bld.scalar("int", hi)]
            o = bld.call("aten::clamp.out", args, want.shape, dtype)
            bld.expect(f"clamp {dtype} {lo} {hi}", o, want)
    xa = sample((4, 5), "int64")
    x = bld.input(xa, "int64")
    want = torch.clamp(torch.from_numpy(xa), -2.5, 7.25)
    o = bld.call("aten::clamp.out", [x, bld.scalar("float", -2.5), bld.scalar("float", 7.25)], want.shape, "float32")
    bld.expect("clamp int64 float bounds", o, want)
    bld.run_and_check(rtol=0, atol=0)


def test_unsafe_masked_index():
    """Indices the mask turns off may be out of range: ATen clamps them, masked-off positions give the fill."""
    x = torch.randn(5, 5)
    mask = torch.rand(10, 10) > 0.5
    i = torch.randint(0, 5, (10, 1))
    j = torch.randint(0, 5, (1, 10))
    mask[3, :] = False  # row 3 and column 4 masked off: their indices are out of range
    mask[:, 4] = False
    i[3, 0], j[0, 4] = 9, -8
    v = torch.randn(10, 10)
    check(lambda x, m, i, j: torch.ops.aten._unsafe_masked_index(x, m, [i, j], -1.5), x, mask, i, j)
    check(lambda x, m, i, j, v: torch.ops.aten._unsafe_masked_index_put_accumulate(x, m, [i, j], v),
          x, mask, i, j, v)


def test_pad_replicate_negative_and_circular():
    """Negative replication pads crop (as ATen); circular pad runs as empty + slice_scatter of copies."""
    import torch.nn.functional as F

    x3, x4, x5 = torch.randn(2, 3, 7), torch.randn(1, 2, 5, 6), torch.randn(1, 2, 4, 5, 6)
    check(lambda a, b, c: (F.pad(a, (-2, 3), mode="replicate"), F.pad(a, (1, -3), mode="replicate"),
                           F.pad(a, (-2, -2), mode="replicate"),
                           F.pad(b, (-1, 2, 3, -2), mode="replicate"), F.pad(b, (-2, -3, -1, -1), mode="replicate"),
                           F.pad(c, (1, -2, -1, 2, -1, 0), mode="replicate"),
                           F.pad(a, (2, 3), mode="replicate"), F.pad(b, (1, 2, 3, 0), mode="reflect")),
          x3, x4, x5, rtol=0, atol=0)
    check(lambda a, b: (F.pad(a, (1, 2), mode="circular"), F.pad(b, (2, 1, 0, 3), mode="circular"),
                        F.pad(b, (-1, 2, 1, -1), mode="circular")),
          x3, x4, rtol=0, atol=0)


def test_complex_is_refused_with_what_to_do():
    """Complex tensors are out of scope: the error names the operator, the dtype and a real formulation."""
    import pytest

    from mcu_gen.capture.export import UnsupportedOperatorError, export_model
    from mcu_gen.capture.model_file import ModelSpec
    from tests.op_check import Fn

    x = torch.randn(64)
    for fn in (lambda x: torch.stft(x, 16, return_complex=True).abs(),
               lambda x: torch.view_as_real(torch.stft(x, 16, return_complex=True)),
               lambda x: torch.view_as_real(torch.fft.rfft(x))):
        with pytest.raises(UnsupportedOperatorError) as e:
            export_model(ModelSpec(Fn(fn).eval(), (x,)))
        msg = str(e.value)
        assert "complex64" in msg and "aten::_fft_r2c" in msg and "out of mcu-gen's scope" in msg
        assert "unfold" in msg and "DFT" in msg and "\n  at " in msg
