"""Operators without a kernel that mcu-gen computes from others (mcu_gen/capture/decompositions.py):
adaptive max pooling (values and PyTorch's indices, windows that tile the input or overlap) and nn.LocalResponseNorm's
avg_pool3d, on the host build of the portable kernels against PyTorch; the bucketize and sort kernels; and the error of an
operator that stays unsupported inside an int8 model's fp32 island: the operator and the user's line, no line of
mcu-gen's own code."""
from __future__ import annotations

import textwrap

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mcu_gen.capture.export import UnsupportedOperatorError, export_model
from mcu_gen.capture.model_file import ModelSpec, load_model_file
from tests.op_check import check


class _Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.lrn = nn.LocalResponseNorm(3)

    def forward(self, x, seq):
        v, i = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)  # overlapping windows: 7 -> 3, 9 -> 4
        tiled, tiled_i = F.adaptive_max_pool2d(x[..., :6, :8], (2, 4), return_indices=True)
        up = F.adaptive_max_pool2d(x[:, :1, :2, :3], (3, 5))  # more outputs than inputs
        v1, i1 = F.adaptive_max_pool1d(seq, 5, return_indices=True)
        return v, i, tiled, tiled_i, up, v1, i1, self.lrn(x), nn.LocalResponseNorm(2)(seq)


def test_adaptive_max_pool_and_local_response_norm_equal_pytorch():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-3, 4, (2, 3, 7, 9), generator=g).float()  # many equal maxima: PyTorch's first one wins
    x[0, 1, 2, 3] = float("nan")
    seq = torch.randn(1, 4, 11, generator=g)
    check(_Pools().eval(), x, seq)
    ops = export_model(ModelSpec(_Pools().eval(), (x, seq))).operators
    assert not [op for op in ops if "adaptive_max" in op or "pool3d" in op], ops


def test_bucketize_equals_pytorch():
    x = torch.tensor([[-1.0, -0.5, 0.0, 0.2, 0.5, 0.7, float("nan"), 3.0]])
    b = torch.tensor([-0.5, 0.0, 0.5, 0.5, 1.0])
    ints = torch.tensor([[-3, 0, 2, 5, 9, 7]])
    bi = torch.tensor([0, 2, 2, 7], dtype=torch.int32)
    check(lambda x, b, ints, bi: (torch.bucketize(x, b), torch.bucketize(x, b, right=True),
                                  torch.bucketize(x, b, out_int32=True), torch.bucketize(ints, bi),
                                  torch.bucketize(ints, bi, right=True), torch.bucketize(x, bi)),
          x, b, ints, bi)


def test_an_unsupported_operator_in_an_fp32_island_names_the_users_line(tmp_path):
    from mcu_gen.backends.kernels import find_kernels
    from mcu_gen.quantize import export_quantized

    path = tmp_path / "pool3d.py"
    path.write_text(textwrap.dedent("""\
        import torch
        import torch.nn.functional as F


        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(2, 4, 1)

            def forward(self, x):
                return F.avg_pool3d(self.conv(x).unsqueeze(1), 2)


        def model():
            return M().eval()


        def example_inputs():
            return (torch.rand(1, 2, 4, 4),)


        def calibration_inputs():
            return [(torch.rand(1, 2, 4, 4),) for _ in range(4)]
        """))
    with pytest.raises(UnsupportedOperatorError) as e:
        export_quantized(load_model_file(path), has_kernel=find_kernels().__contains__)
    msg = str(e.value)
    assert "aten::avg_pool3d" in msg
    assert f"{path}:11: return F.avg_pool3d(self.conv(x).unsqueeze(1), 2)" in msg
    assert "mcu_gen/" not in msg, msg


def test_sort_equals_pytorch_with_ties_and_nan():
    """ATen's CPU order of equal elements: std::sort's (stable up to 16 elements, not beyond) or a stable sort."""
    g = torch.Generator().manual_seed(1)
    x = torch.randint(-2, 3, (3, 7, 5), generator=g).float()
    x[1, 3, 2] = float("nan")
    x[2, 0, 2] = float("nan")
    ints = torch.randint(-5, 5, (2, 40), generator=g, dtype=torch.int32)
    cols = torch.randint(0, 3, (20, 3), generator=g).float()  # 20 elements along a dim that is not the last
    cols[4, 1] = float("nan")
    check(lambda x, ints, cols: (*torch.sort(x, 1), *torch.sort(x, -1, descending=True),
                                 *torch.sort(x, stable=True, dim=0, descending=True), *torch.sort(ints),
                                 *torch.sort(ints, descending=True), *torch.sort(ints, stable=True, descending=True),
                                 *torch.sort(cols, 0), *torch.sort(cols, 0, descending=True),
                                 *torch.sort(cols, stable=False, dim=0), torch.msort(x)),
          x, ints, cols)


@pytest.mark.qemu
def test_sort_and_topk_run_on_the_rv32_board_without_a_cxx_library(tmp_path, qemu_tools):
    """The RISC-V toolchain (picolibc) has no C++ standard library headers: sort_common.h writes out libstdc++'s
    introsort, heap and nth_element, so topk and sort build and verify there too."""
    from mcu_gen.device.runner import run

    path = tmp_path / "ranks.py"
    path.write_text(textwrap.dedent("""\
        import torch


        class M(torch.nn.Module):
            def forward(self, x):
                v, i = torch.sort(x, -1, descending=True)
                t = torch.topk(x, 3, -1)
                return v, i, t.values, t.indices, torch.sort(x, stable=True, dim=0).indices


        def model():
            return M().eval()


        def example_inputs():
            return (torch.randint(-3, 4, (4, 70)).float(),)


        def test_inputs():
            g = torch.Generator().manual_seed(3)
            return [(torch.randint(-3, 4, (4, 70), generator=g).float(),) for _ in range(2)]
        """))
    r = run(str(path), board="rv32-virt", out=tmp_path / "out")
    assert r.verified, r


class _Bilinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = nn.Bilinear(4, 5, 3)
        self.nobias = nn.Bilinear(5, 5, 2, bias=False)

    def forward(self, x1, x2, seq):
        return self.b(x1, x2), self.nobias(seq, seq)  # seq (2, 6, 5): leading dims flattened by F.bilinear


def test_bilinear_equals_pytorch_without_a_trilinear_kernel():
    """nn.Bilinear calls aten._trilinear, which has no kernel here or in ExecuTorch's portable library: one mm and
    a product summed over J (decompositions.trilinear)."""
    g = torch.Generator().manual_seed(1)
    x1, x2, seq = torch.randn(3, 4, generator=g), torch.randn(3, 5, generator=g), torch.randn(2, 6, 5, generator=g)
    check(_Bilinear().eval(), x1, x2, seq)
    ops = export_model(ModelSpec(_Bilinear().eval(), (x1, x2, seq))).operators
    assert not [op for op in ops if "trilinear" in op], ops
