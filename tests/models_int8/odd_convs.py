"""Grouped, dilated and odd-kernel convolutions with ceil-mode pooling."""
import torch
from torch import nn

SHAPES = [(1, 4, 15, 13)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 8, (5, 3), padding=(2, 1))
        self.g = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.d = nn.Conv2d(8, 8, 3, padding=2, dilation=2)
        self.c2 = nn.Conv2d(8, 12, (1, 7), stride=(2, 1), padding=(0, 3))
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = nn.functional.max_pool2d(x, 2, ceil_mode=True)
        x = torch.relu(self.g(x))
        x = torch.relu(self.d(x))
        x = nn.functional.avg_pool2d(x, 3, stride=2, ceil_mode=True)
        x = self.c2(x)
        return self.fc(x.mean(dim=(2, 3)))


def model():
    torch.manual_seed(13)
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
