"""A temporal convolutional network over 3 sensor channels x 96 samples: causal Conv1d blocks of dilation 1, 2, 4
and 8 (the causal padding an F.pad on the left), a depthwise Conv1d of dilation 4, residual adds with a 1x1
downsample, the last time step (x[:, :, -1]) into a 5-class head, and one dilated Conv1d whose padding is not a
multiple of its dilation. Every Conv1d output, pad, residual sum and the picked step stay channels-last; the
dilated layers of stride 1, padding and length multiples of the dilation run as k x 1 convolutions over the
length folded into rows of the dilation (mcu_gen/quantize/int8_ops/conv.py: _fold_dilation)."""
import torch
from torch import nn
import torch.nn.functional as F

SHAPES = [(1, 3, 96)]


class Block(nn.Module):
    def __init__(self, cin, cout, dilation):
        super().__init__()
        self.d = dilation
        self.c1 = nn.Conv1d(cin, cout, 3, dilation=dilation)
        self.c2 = nn.Conv1d(cout, cout, 3, dilation=dilation)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        y = torch.relu(self.c1(F.pad(x, (2 * self.d, 0))))
        y = torch.relu(self.c2(F.pad(y, (2 * self.d, 0))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(3, 16, 1), Block(16, 16, 2), Block(16, 20, 4), Block(20, 20, 8))
        self.dw = nn.Conv1d(20, 20, 5, dilation=4, padding=8, groups=20)
        self.odd = nn.Conv1d(20, 24, 3, dilation=2, padding=1)
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        x = self.blocks(x)
        x = torch.relu(self.dw(x)) + x
        x = torch.relu(self.odd(x))
        return self.fc(x[:, :, -1])


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
