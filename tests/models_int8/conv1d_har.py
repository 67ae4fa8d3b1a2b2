"""Human-activity recognition over 6 sensor channels (two 3-axis sensors) x 256 samples: depthwise-separable Conv1d
blocks whose channel counts (6, 30, 45) are not multiples of 4, kernels of 9, 7 and 5 taps, BatchNorm1d, ReLU6,
a mean over time and a 6-class head. The depthwise layers run in place over one row of 256 or 128 samples."""
import torch
from torch import nn

SHAPES = [(1, 6, 256)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(6, 6, 9, padding=4, groups=6), nn.BatchNorm1d(6), nn.ReLU6(),
            nn.Conv1d(6, 30, 1), nn.BatchNorm1d(30), nn.ReLU6(),
            nn.Conv1d(30, 30, 7, stride=2, padding=3, groups=30), nn.BatchNorm1d(30), nn.ReLU6(),
            nn.Conv1d(30, 45, 1), nn.BatchNorm1d(45), nn.ReLU6(),
            nn.Conv1d(45, 45, 5, padding=2, groups=45), nn.BatchNorm1d(45), nn.ReLU6(),
            nn.Conv1d(45, 64, 1), nn.ReLU6())
        self.fc = nn.Linear(64, 6)

    def forward(self, x):
        return self.fc(self.features(x).mean(dim=-1))


def model():
    torch.manual_seed(11)
    net = Net()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.running_mean = 0.1 * torch.randn(m.num_features)
            m.running_var = 0.5 + torch.rand(m.num_features)
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
