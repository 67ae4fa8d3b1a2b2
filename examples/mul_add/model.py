"""Two operators, `x * y + x` on 1x16 floats: the smallest useful program.

It measures the runtime's fixed cost per inference (executor, argument decoding,
kernel call overhead) rather than arithmetic; ExecuTorch's paper uses the same
kind of model (9,272 cycles per inference on its runtime).
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 16)


class MulAdd(nn.Module):
    def forward(self, x, y):
        return x * y + x


def model() -> nn.Module:
    return MulAdd().eval()


def _inputs(seed: int, count: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(INPUT_SHAPE, generator=g), torch.randn(INPUT_SHAPE, generator=g)) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)
