"""Audio front end: strided conv1d over a waveform, depthwise conv1d, mean over time, classifier."""
import torch
from torch import nn

SHAPES = [(1, 1, 400)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Conv1d(1, 8, 16, stride=8, padding=4)
        self.dw = nn.Conv1d(8, 8, 5, padding=2, groups=8)
        self.pw = nn.Conv1d(8, 16, 1)
        self.fc = nn.Linear(16, 6)

    def forward(self, x):
        x = torch.relu(self.front(x))
        x = torch.relu(self.pw(torch.relu(self.dw(x))))
        return self.fc(x.mean(dim=-1))


def model():
    torch.manual_seed(10)
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
