"""Tiny U-Net: conv, pool, conv, bilinear upsample, skip concat, conv."""
import torch
from torch import nn
import torch.nn.functional as F

INPUT_SHAPE = (1, 1, 16, 16)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv2d(1, 8, 3, padding=1)
        self.e2 = nn.Conv2d(8, 16, 3, padding=1)
        self.d1 = nn.Conv2d(24, 8, 3, padding=1)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = torch.relu(self.e1(x))
        b = torch.relu(self.e2(F.max_pool2d(a, 2)))
        u = F.interpolate(b, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(torch.relu(self.d1(torch.cat([u, a], dim=1))))


def model():
    torch.manual_seed(0)
    return UNet().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
