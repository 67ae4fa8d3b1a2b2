"""Grouped convolutions (ResNeXt / RegNet style): a 3x3 of 4 groups, a 1x1 of 2 groups, and a stride-2 3x3 of 8
groups, each with ReLU, between a stem and a pooled classifier."""
import torch
from torch import nn

SHAPES = [(1, 3, 12, 12)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1)
        self.g4 = nn.Conv2d(16, 16, 3, 1, 1, groups=4)
        self.g2 = nn.Conv2d(16, 32, 1, groups=2)
        self.g8 = nn.Conv2d(32, 32, 3, 2, 1, groups=8)
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(self.g4(x)) + x
        x = torch.relu(self.g8(torch.relu(self.g2(x))))
        return self.fc(x.mean((2, 3)))


def model():
    torch.manual_seed(23)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [tuple(2 * torch.rand(s, generator=g) - 1 for s in SHAPES) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
