"""Stateful test model whose state an fp32 island reads in an int8 build (layer_norm of the state),
so the state stays fp32 inside the int8 program: the int8 readers quantize it, its int8 new value
is dequantized into it."""
import torch
from torch import nn
from torch.nn import functional as F


class Fp32Reader(nn.Module):
    def __init__(self, features=6, classes=3):
        super().__init__()
        self.register_buffer("acc", torch.zeros(1, features))
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        y = F.layer_norm(self.acc, (self.acc.shape[1],))
        self.acc.copy_(self.acc * 0.5 + x)
        return self.fc(y)


def model():
    torch.manual_seed(0)
    return Fp32Reader()


def example_inputs():
    return (torch.randn(1, 6),)


def calibration_sequences():
    g = torch.Generator().manual_seed(100)
    return [[(torch.randn(1, 6, generator=g),) for _ in range(16)] for _ in range(4)]
