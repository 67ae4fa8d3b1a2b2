"""Stateful test model: an nn.LSTMCell whose hidden and cell states are registered buffers."""
import torch
from torch import nn


class LstmStep(nn.Module):
    def __init__(self, features=10, hidden=12, classes=4):
        super().__init__()
        self.cell = nn.LSTMCell(features, hidden)
        self.register_buffer("h", torch.zeros(1, hidden))
        self.register_buffer("c", torch.zeros(1, hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h, c = self.cell(x, (self.h, self.c))
        self.h.copy_(h)
        self.c.copy_(c)
        return self.head(h)


def model():
    torch.manual_seed(2)
    return LstmStep()


def example_inputs():
    return (torch.randn(1, 10),)


def calibration_sequences():
    """int8: 4 seeded sequences of 16 steps, fed step by step with the state carried."""
    g = torch.Generator().manual_seed(100)
    return [[(torch.randn(1, 10, generator=g),) for _ in range(16)] for _ in range(4)]
