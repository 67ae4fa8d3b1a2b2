"""Small vision net with GroupNorm, InstanceNorm and a threshold mask."""
import torch
from torch import nn

INPUT_SHAPE = (1, 3, 16, 16)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.g1 = nn.GroupNorm(2, 8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.i2 = nn.InstanceNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.g1(self.c1(x)))
        y = self.i2(self.c2(y))
        y = torch.where(y > 0.1, y, torch.zeros_like(y))
        y = y.repeat(1, 2, 1, 1)[:, :8]
        return self.fc(y.mean(dim=(2, 3)))


def model():
    torch.manual_seed(0)
    return Norms().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
