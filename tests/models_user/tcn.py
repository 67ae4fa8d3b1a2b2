"""Causal TCN: dilated Conv1d with left padding (F.pad), residual, last step."""
import torch
from torch import nn
import torch.nn.functional as F

INPUT_SHAPE = (1, 8, 32)


class Block(nn.Module):
    def __init__(self, c, d):
        super().__init__()
        self.d = d
        self.conv = nn.Conv1d(c, c, 3, dilation=d)

    def forward(self, x):
        return x + torch.relu(self.conv(F.pad(x, (2 * self.d, 0))))


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(8, 1), Block(8, 2), Block(8, 4))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.blocks(x)[:, :, -1])


def model():
    torch.manual_seed(0)
    return TCN().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
