"""An M5-style raw-audio network over 1,600 samples: Conv1d(1, 16, 40, stride 4), BatchNorm1d, ReLU, then the 1-D
pools such networks use: max_pool1d(4), max_pool1d(3, stride 2, padding 1, ceil_mode), avg_pool1d(2),
avg_pool1d(3, stride 2, ceil_mode) and AdaptiveAvgPool1d(1), between Conv1d layers, into an 8-class head. The pools
run in int8 on the Conv1d outputs' channels-last bytes ([N, C, L] as [N, C, 1, L]: no transpose, no fp32 island)."""
import torch
from torch import nn
import torch.nn.functional as F

SHAPES = [(1, 1, 1600)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 16, 40, stride=4)
        self.b1 = nn.BatchNorm1d(16)
        self.c2 = nn.Conv1d(16, 16, 3, padding=1)
        self.c3 = nn.Conv1d(16, 24, 3)
        self.c4 = nn.Conv1d(24, 32, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(32, 8)

    def forward(self, x):
        x = F.max_pool1d(F.relu(self.b1(self.c1(x))), 4)
        x = F.max_pool1d(F.relu(self.c2(x)), 3, stride=2, padding=1, ceil_mode=True)
        x = F.avg_pool1d(F.relu(self.c3(x)), 2)
        x = F.avg_pool1d(F.relu(self.c4(x)), 3, stride=2, ceil_mode=True)
        return self.fc(self.pool(x).flatten(1))


def model():
    torch.manual_seed(19)
    net = Net()
    net.b1.running_mean = 0.1 * torch.randn(16)
    net.b1.running_var = 0.5 + torch.rand(16)
    return net.eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [tuple(2 * torch.rand(s, generator=g) - 1 for s in SHAPES) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
