"""Stateful test model: a running mean (exponential moving average) of the input and a step counter,
both registered buffers; the output is the input minus the running mean (anomaly-style)."""
import torch
from torch import nn


class RunningMean(nn.Module):
    def __init__(self, features=6, momentum=0.25):
        super().__init__()
        self.register_buffer("mean", torch.full((1, features), 0.5))
        self.register_buffer("count", torch.zeros(1, 1))
        self.momentum = momentum

    def forward(self, x):
        self.mean.copy_(self.mean * (1 - self.momentum) + x * self.momentum)
        self.count.copy_(self.count + 1)
        return x - self.mean, self.count * 1.0


def model():
    return RunningMean()


def example_inputs():
    return (torch.randn(1, 6),)


def test_sequences():
    g = torch.Generator().manual_seed(7)
    return [[(torch.randn(1, 6, generator=g) + k * 0.1,) for k in range(16)]]


def calibration_sequences():
    """int8: 4 seeded sequences like test_sequences() (a drifting input), fed step by step."""
    g = torch.Generator().manual_seed(100)
    return [[(torch.randn(1, 6, generator=g) + k * 0.1,) for k in range(16)] for _ in range(4)]
