"""MobileNetV3-style block: conv + hardswish, squeeze-excite (global pool, 1x1 convs, hardsigmoid,
broadcasting mul), residual add, adaptive pool, classifier."""
import torch
from torch import nn

SHAPES = [(1, 3, 16, 16)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.se1 = nn.Conv2d(16, 4, 1)
        self.se2 = nn.Conv2d(4, 16, 1)
        self.pw = nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = nn.functional.hardswish(self.stem(x))
        y = nn.functional.hardswish(self.dw(x))
        s = nn.functional.adaptive_avg_pool2d(y, 1)
        s = nn.functional.hardsigmoid(self.se2(torch.relu(self.se1(s))))
        y = self.pw(y * s)
        x = x + y
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return self.fc(x)


def model():
    torch.manual_seed(11)
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
