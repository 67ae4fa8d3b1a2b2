"""Kernels the ordinary small models of issue 24 need (log, rsqrt, var, amax, gt, logical_not, any,
constant_pad_nd, repeat, group norm, batch norm without stats, bilinear upsampling), exported from
PyTorch modules and run on the host build against PyTorch eager: fp32 within 1e-5, ints and bools exact,
NaN/inf where PyTorch has them."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import ModelSpec

from tests.op_check import Fn, check


def test_log_rsqrt_with_zero_negative_and_integer_inputs():
    x = torch.tensor([[0.0, -1.0, 1e-3, 2.5], [7.0, 1e6, 3.0, 0.5]])
    i = torch.tensor([1, 4, 0, 9], dtype=torch.int32)
    check(lambda a, b: (torch.log(a), torch.rsqrt(a), torch.log(b), torch.rsqrt(b), torch.log(a.abs() + 1e-3)), x, i)


def test_var_amax_over_dims_keepdim_and_correction():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, generator=g)
    check(lambda a: (a.var(dim=-1, keepdim=True), a.var(dim=(0, 2)), torch.var(a, dim=1, correction=0),
                     a.var(), a.amax(), a.amax(dim=1), a.amax(dim=(0, -1), keepdim=True)), x)


def test_amax_propagates_nan_and_keeps_integer_dtypes():
    x = torch.tensor([[1.0, float("nan"), 3.0], [-1.0, -5.0, float("inf")]])
    i = torch.tensor([[3, -7, 2], [-1, 0, 9]], dtype=torch.int64)
    check(lambda a, b: (a.amax(dim=1), b.amax(dim=0), b.amax()), x, i)


def test_comparisons_logical_not_any_and_where():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, generator=g)
    i = torch.tensor([[0, 2, -3, 0]], dtype=torch.int32)
    m = torch.tensor([[True, False, False, True]])
    check(lambda a, b, c: (a > 0.1, b > 0, torch.logical_not(c), torch.logical_not(b), torch.logical_not(a > 0),
                           (a > 1.0).any(), (a > 0.5).any(dim=1), (a > 0.5).any(dim=0, keepdim=True),
                           torch.where(a > 0.1, a, torch.zeros_like(a))), x, i, m)


def test_constant_pad_nd_pads_and_crops_any_dims_and_dtypes():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1, 3, 5, generator=g)
    img = torch.randn(1, 2, 4, 4, generator=g)
    i = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    check(lambda a, b, c: (F.pad(a, (4, 0)), F.pad(a, (1, 2), value=-1.5), F.pad(b, (1, 1, 2, 0)),
                           F.pad(b, (-1, 1, 0, -2)), F.pad(b, (0, 0, 0, 0, 1, 1)), F.pad(c, (2, 1), value=7),
                           F.pad(a, (-5, 0))), x, img, i)


def test_repeat_tiles_and_adds_leading_dims():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, generator=g)
    i = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    check(lambda a, b: (a.repeat(2, 1), a.repeat(1, 3), a.repeat(2, 2, 2), b.repeat(3, 1), a.repeat(1, 1)), x, i)


def test_group_norm_instance_norm_and_batch_norm_without_stats():
    torch.manual_seed(4)
    gn = torch.nn.GroupNorm(2, 6)
    gn1 = torch.nn.GroupNorm(1, 6, affine=False)
    inorm = torch.nn.InstanceNorm2d(6, affine=True)
    with torch.no_grad():
        gn.weight.uniform_(0.5, 1.5), gn.bias.uniform_(-0.5, 0.5)
        inorm.weight.uniform_(0.5, 1.5), inorm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 6, 3, 5) * 3 + 1
    seq = torch.randn(1, 6, 10)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gn, self.gn1, self.inorm, self.gnseq = gn, gn1, inorm, torch.nn.GroupNorm(3, 6)

        def forward(self, a, s):
            return self.gn(a), self.gn1(a), self.inorm(a), self.gnseq(s), F.instance_norm(s)

    check(M().eval(), x, seq, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align", [False, True])
def test_bilinear_upsampling_by_factor_and_to_a_size(align):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, 3, 4, 5, generator=g)
    check(lambda a: (F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=align),
                     F.interpolate(a, size=(7, 3), mode="bilinear", align_corners=align),
                     F.interpolate(a, size=(1, 1), mode="bilinear", align_corners=align),
                     F.interpolate(a, size=(4, 5), mode="bilinear", align_corners=align)), x)


def test_bilinear_scale_factor_that_the_sizes_do_not_express_is_refused_by_name():
    from mcu_gen.capture.export import UnsupportedOperatorError

    x = torch.randn(1, 1, 5, 5)
    module = Fn(lambda a: F.interpolate(a, scale_factor=1.5, mode="bilinear"))
    with pytest.raises(UnsupportedOperatorError, match=r"upsample_bilinear2d.*scale_factor 1.5.*size="):
        export_model(ModelSpec(module, (x,)))


def test_copy_broadcasts_and_converts_into_selfs_shape_and_dtype():
    x = torch.randn(2, 3)
    v = torch.tensor([1, -2, 3], dtype=torch.int32)
    b = torch.tensor([True, False, True])
    check(lambda a, s, m: (torch.ops.aten.copy.default(a, s), torch.ops.aten.copy.default(a, m),
                           torch.ops.aten.copy.default(s, a[0])), x, v, b)
