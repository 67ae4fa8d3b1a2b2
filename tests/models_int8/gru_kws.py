"""A keyword spotter on a 2-layer nn.GRU: 49 frames of 10 MFCCs, hidden 48, the last step through a linear
classifier of 12 keywords (tests/test_recurrent.py: the GRU as one loop, mcu::gru)."""
import torch
from torch import nn

SHAPE = (1, 49, 10)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(10, 48, num_layers=2, batch_first=True)
        self.fc = nn.Linear(48, 12)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


def model():
    torch.manual_seed(27)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(SHAPE, generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(0, 1)[0]


def calibration_inputs():
    return _inputs(1, 16)


def test_inputs():
    return _inputs(2, 2)
