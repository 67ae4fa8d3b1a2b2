"""Stateful test model: an nn.GRUCell whose hidden state is a registered buffer, then a linear head."""
import torch
from torch import nn


class GruStep(nn.Module):
    def __init__(self, features=10, hidden=16, classes=4):
        super().__init__()
        self.cell = nn.GRUCell(features, hidden)
        self.register_buffer("h", torch.zeros(1, hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = self.cell(x, self.h)
        self.h.copy_(h)
        return self.head(h)


def model():
    torch.manual_seed(1)
    return GruStep()


def example_inputs():
    return (torch.randn(1, 10),)


def calibration_sequences():
    """int8: 4 seeded sequences of 16 steps, fed step by step with the state carried."""
    g = torch.Generator().manual_seed(100)
    return [[(torch.randn(1, 10, generator=g),) for _ in range(16)] for _ in range(4)]
