"""The elementwise nonlinearities small networks use: leaky_relu, silu, gelu, tanh, sigmoid,
hardswish, hardsigmoid, with a classifier head. (elu is left out: the fp32 kernels have none,
and the rule is about models that run in fp32.)"""
import torch
from torch import nn
from torch.nn import functional as F

SHAPES = [(1, 2, 8, 8)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        x = F.leaky_relu(self.c1(x), 0.1)
        x = F.silu(self.c2(x))
        x = F.hardswish(self.c3(x))
        x = F.gelu(self.fc1(x.flatten(1)))
        x = torch.tanh(x) + F.hardsigmoid(x)
        return torch.sigmoid(self.fc2(x))


def model():
    torch.manual_seed(17)
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
