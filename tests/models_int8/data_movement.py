"""Ops that only move bytes, in int8 with their input's quantization parameters: constant-0,
reflect and replicate padding, repeat, a slice of a 4-D tensor, amax/amin, select, expand; and
bilinear upsampling (align_corners False and True), which interpolates within its input's range."""
import torch
from torch import nn
from torch.nn import functional as F

SHAPES = [(1, 3, 10, 12)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv1d(8, 8, 3)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.c1(F.pad(x, (1, 1, 2, 0))))  # constant 0 (the zero point), 4-D
        y = F.pad(y, (1, 1, 1, 1), mode="reflect")
        y = y.repeat(1, 1, 1, 2)[:, :, :, :8]  # repeat, then a slice of a channels-last tensor
        y = F.interpolate(y[:, :, 1:6], scale_factor=2, mode="bilinear") + F.interpolate(  # bilinear, both modes
            y, size=(10, 16), mode="bilinear", align_corners=True)
        y = y.amax(dim=2)  # [1, 8, 8]
        y = F.pad(y, (2, 0), mode="replicate")
        z = self.c2(y)  # [1, 8, 8]
        e = z[:, :, 3].unsqueeze(1).expand(1, 2, 8).reshape(1, 16)  # select, expand
        return self.fc(e) + z.amin(dim=-1)[:, :4]


def model():
    torch.manual_seed(21)
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
