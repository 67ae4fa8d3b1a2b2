"""Inception-style branches joined by cat along channels (different scales per branch), then a
max-pool branch and a channel cat again."""
import torch
from torch import nn

SHAPES = [(1, 4, 12, 12)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = nn.Conv2d(4, 6, 1)
        self.b2 = nn.Conv2d(4, 6, 3, padding=1)
        self.b3 = nn.Conv2d(4, 4, 5, padding=2)
        self.mix = nn.Conv2d(16, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 6 * 6 + 16 * 6 * 6, 4)

    def forward(self, x):
        y = torch.cat([torch.relu(self.b1(x)), self.b2(x), torch.relu(self.b3(x))], dim=1)
        z = torch.relu(self.mix(y))
        p = nn.functional.max_pool2d(y, 2)
        return self.fc(torch.cat([z, p], dim=1).flatten(1))


def model():
    torch.manual_seed(12)
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
