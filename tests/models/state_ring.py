"""Stateful test model: a ring of the last 8 frames of 4 features (a registered buffer updated with
copy_ in forward), followed by a linear layer over the whole window."""
import torch
from torch import nn


class RingBuffer(nn.Module):
    def __init__(self, frames=8, features=4):
        super().__init__()
        self.register_buffer("hist", torch.zeros(1, frames * features))
        self.features = features
        self.fc = nn.Linear(frames * features, 3)

    def forward(self, x):
        self.hist.copy_(torch.cat([self.hist[:, self.features:], x], 1))
        return torch.relu(self.fc(self.hist))


def model():
    torch.manual_seed(0)
    return RingBuffer()


def example_inputs():
    return (torch.randn(1, 4),)


def calibration_sequences():
    """int8: 4 seeded sequences of 16 steps, fed step by step with the state carried."""
    g = torch.Generator().manual_seed(100)
    return [[(torch.randn(1, 4, generator=g),) for _ in range(16)] for _ in range(4)]
