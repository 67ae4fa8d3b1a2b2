"""A small recurrent model: a 2-layer nn.LSTM over 12 steps of 8 features (hidden 16), its last
step through a linear classifier (issue 25: int8 must not cost more RAM than fp32 here)."""
import torch
from torch import nn

SHAPE = (1, 12, 8)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


def model():
    torch.manual_seed(25)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(2 * torch.rand(SHAPE, generator=g) - 1,) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 16)
