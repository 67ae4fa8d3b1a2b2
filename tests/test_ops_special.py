"""Operators beyond ExecuTorch's portable list that real graphs carry: special functions (hypot, copysign, signbit,
round(decimals=), erfinv, i0), integer ops (gcd, lcm, Python's shift operators, a number on the left of %, <<, >>),
nn.RReLU in eval, searchsorted and histc, on the host build of the portable kernels against PyTorch; their bad
arguments fail cleanly; a -0.0 Scalar keeps its sign through the program file."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte_reader, pte_writer
from mcu_gen.program.ir import Instruction
from tests.op_check import check
from tests.test_ops_reduce import Builder, sample


def _special(x):
    edges = torch.tensor([1.0, -1.0, 1.5, 0.0, -0.7, 0.7, 0.71, -0.999])
    n = torch.nan_to_num(x)  # (NaN to an integer is the C library's business)
    return (torch.hypot(x, x.flip(1) * 1e20), torch.hypot(x, torch.tensor(3.0)),
            torch.copysign(x, -x.flip(1)), torch.copysign((n * 3).int(), torch.tensor(-0.0)),
            torch.copysign(x, -0.0), torch.copysign((n * 3).to(torch.int8), 2),
            torch.signbit(x), torch.signbit(-x * 0), torch.signbit((n * 3).int()), torch.signbit((n * 3).to(torch.uint8)),
            torch.round(x * 7, decimals=2), torch.round(x * 1000, decimals=-2),
            torch.round(torch.tensor([2.675, 0.125, 1.005, 15.0, 25.0, 1e30, -2.5]), decimals=1),
            torch.erfinv(torch.tanh(x) * 0.999), torch.erfinv(edges), torch.erfinv(torch.tensor([0, 1])),
            torch.i0(x * 5), torch.i0(torch.tensor([0.0, 8.0, -8.0, 8.001, 30.0, 80.0, 100.0])),
            torch.special.i0(torch.tensor([3, -2])),
            nn.functional.rrelu(x, training=False), nn.RReLU(0.1, 0.3).eval()(x))


def test_special_functions_equal_pytorch():
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(3))
    x[0, 0] = -0.0
    x[1, 1] = float("nan")
    check(_special, x, rtol=2e-5, atol=1e-6)


def _integers(x):
    i = (x * 30).int()
    i8 = torch.tensor([-128, 0, 100, -6, 127, -1], dtype=torch.int8)
    j8 = torch.tensor([6, 0, -128, -9, 3, -128], dtype=torch.int8)
    small = (x.abs() * 3).int()
    return (torch.gcd(i, torch.tensor([6, 0, -4, 7, 9, 12, 0, 5], dtype=torch.int32)),
            torch.lcm(i, torch.tensor([6, 1, -4, 7, 9, 12, 0, 5], dtype=torch.int32)),
            torch.gcd(i8, j8), torch.lcm(i8, j8),
            torch.gcd(torch.tensor([-2 ** 63, 12, 0]), torch.tensor([6, -2 ** 63, 0])),
            torch.lcm(torch.tensor([2 ** 40, -3]), torch.tensor([2 ** 40 + 2, 2 ** 62])),
            torch.gcd(torch.tensor([200, 0, 9], dtype=torch.uint8), torch.tensor([150, 7, 0], dtype=torch.uint8)),
            i << 2, i >> 1, 3 << small, 100 >> small, i.to(torch.int8) << torch.arange(1, 9, dtype=torch.int8),
            i >> small.to(torch.int64),
            3 & i, 5 | i, 6 ^ i, 7 % (x.abs() * 3 + 1), 7 % (small + 1), -7.5 % (small - 1))


def test_integer_ops_equal_pytorch():
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(4))
    check(_integers, x)


def _search(x, seq_int):
    rows = torch.sort(x, dim=1)[0]
    return (torch.searchsorted(rows, x), torch.searchsorted(rows, x, right=True),
            torch.searchsorted(torch.tensor([-1.0, 0.0, 0.0, 0.5, 2.0]), x, side="right", out_int32=True),
            torch.searchsorted(x[0], x[1:2].T.contiguous(), sorter=torch.argsort(x[0])),
            torch.searchsorted(seq_int, (x * 3).round()), torch.searchsorted(seq_int, (x * 3).round().int()),
            torch.searchsorted(torch.tensor([0.1, 0.2, 0.3]), 0.2, right=True),
            torch.searchsorted(torch.tensor([1, 2], dtype=torch.int8), 1000),  # the number wraps to int8, as in ATen
            torch.searchsorted(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[2.5], [float("nan")]])),
            torch.bucketize(x, torch.tensor([-0.5, 0.0, 0.5])),
            torch.histc(x, bins=7, min=-1.3, max=2.9), torch.histc(x, bins=4), torch.histc(torch.tensor([1.0, 1.0]), bins=4),
            torch.histc(torch.linspace(-5, 5, 14), bins=13, min=-5, max=5),  # elements on the bin edges
            torch.histc(torch.tensor([0.3, 0.6, 0.9, float("nan"), 1.0, 0.0, -0.1]), bins=10, min=0, max=1))


def test_search_and_histogram_equal_pytorch():
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(5))
    x[0, 3] = x[0, 5]  # a tie in the sorted rows
    check(_search, x, torch.tensor([1, 2, 2, 5], dtype=torch.int32))


@pytest.mark.parametrize("case", ["sorter out of its row", "side left with right=True", "side not a side",
                                  "histc out is not bins long", "histc range not finite"])
def test_bad_arguments_fail_cleanly(case):
    bld = Builder()
    x = bld.input(sample((4,), "float32"))
    s = bld.scalar
    if case.startswith("histc"):
        bins, lo, hi = (4, 0.0, 1.0) if "bins" in case else (4, 0.0, math.inf)
        out = bld.p.add_tensor((5 if "bins" in case else 4,), "float32")
        args = [x, s("int", bins), s("float", lo), s("float", hi), out, out]
        op = "aten::histc.out"
    else:
        seq = bld.input([0.0, 1.0, 2.0, 3.0])
        sorter = bld.input([0, 5, 1, 2], "int64") if "sorter" in case else s("none")
        side = s("none") if "sorter" in case else s("string", "left" if "left" in case else "up")
        out = bld.p.add_tensor((4,), "int64")
        args = [seq, x, s("bool", False), s("bool", True), side, sorter, out, out]
        op = "aten::searchsorted.Tensor_out"
    bld.p.instructions.append(Instruction(op, args))
    bld.p.outputs.append(out)
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(bld.p, bld.feeds)


def test_negative_zero_scalar_keeps_its_sign_in_the_program():
    bld = Builder()
    x = bld.input(sample((3,), "float32"))
    neg = bld.scalar("float", -0.0)
    bld.p.outputs.append(bld.call("aten::copysign.Scalar_out", [x, neg], (3,), "float32"))
    inplace_pass.plan_memory(bld.p)
    back = pte_reader.read(pte_writer.write(bld.p))
    floats = [v.value for v in back.values if getattr(v, "kind", None) == "float"]
    assert floats == [0.0] and math.copysign(1.0, floats[0]) == -1.0


class _Bags(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(6)
        self.mean = nn.EmbeddingBag(20, 3, mode="mean", padding_idx=3)
        self.sum = nn.EmbeddingBag(20, 3, mode="sum")
        self.max = nn.EmbeddingBag(20, 3, mode="max", padding_idx=3)
        for e in (self.mean, self.sum, self.max):
            e.weight.data = torch.randn(20, 3, generator=g)

    def forward(self, words, offsets, weights, sentences):
        return (self.mean(words, offsets), self.sum(words, offsets, per_sample_weights=weights),
                self.max(words, offsets), self.mean(sentences),  # 2-d: equal bags
                *torch.ops.aten._embedding_bag.default(self.max.weight.detach(), words, offsets, False, 2, False, None, False, 3),
                *torch.ops.aten._embedding_bag_forward_only.default(self.mean.weight.detach(), words.int(), offsets.int(),
                                                                    False, 1, False, None, True, 3)[::3])


def test_embedding_bag_equals_pytorch():
    """nn.EmbeddingBag (text classification's bag of words): sum with per-sample weights, mean and max, padding
    entries left out, an empty bag, the last offset ending the bags; all four outputs of the operator."""
    words = torch.tensor([1, 2, 3, 4, 5, 3, 7, 3, 19, 0])
    offsets = torch.tensor([0, 2, 2, 5, 7])
    weights = torch.rand(10, generator=torch.Generator().manual_seed(2))
    check(_Bags().eval(), words, offsets, weights, torch.tensor([[1, 2, 3], [4, 5, 6]]))
