"""A decoder: transposed convolution, nearest upsampling (twice), tanh, sigmoid output.
(Bilinear upsampling is left out: the fp32 kernels have none.)"""
import torch
from torch import nn

SHAPES = [(1, 8, 4, 4)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 8, 4, stride=2, padding=1)
        self.c1 = nn.Conv2d(8, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.out = nn.Conv2d(4, 1, 1)

    def forward(self, x):
        x = torch.relu(self.up1(x))
        x = nn.functional.interpolate(torch.relu(self.c1(x)), scale_factor=2, mode="nearest")
        x = nn.functional.interpolate(torch.tanh(self.c2(x)), scale_factor=2, mode="nearest")
        return torch.sigmoid(self.out(x))


def model():
    torch.manual_seed(15)
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
