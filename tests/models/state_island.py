"""Stateful test model whose state update runs in fp32 in an int8 build: a running, layer-normalised
feature vector (layer_norm has no int8 kernel, so it is an fp32 island between a dequantize and a
quantize, and the quantize writes the int8 state)."""
import torch
from torch import nn
from torch.nn import functional as F


class NormalisedMemory(nn.Module):
    def __init__(self, features=6, classes=3):
        super().__init__()
        self.register_buffer("acc", torch.zeros(1, features))
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        self.acc.copy_(F.layer_norm(self.acc * 0.5 + x, (self.acc.shape[1],)))
        return self.fc(self.acc)


def model():
    torch.manual_seed(3)
    return NormalisedMemory()


def example_inputs():
    return (torch.randn(1, 6),)


def calibration_sequences():
    g = torch.Generator().manual_seed(100)
    return [[(torch.randn(1, 6, generator=g),) for _ in range(16)] for _ in range(4)]
