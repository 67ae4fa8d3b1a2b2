"""A 3x3 depthwise convolution over short, wide rows (4 x 300 pixels, 8 channels): its in-place form keeps
three input rows (3,600 B) that neither the arena nor the stack budget of the generated kernels holds, so
the default build runs the depthwise layer without in-place (generated) where the library build runs it in
place; the library kernel linked as the generated layer's fallback must then take no more stack than the
in-place one (tests/test_default_ram.py)."""
import torch
from torch import nn

INPUT_SHAPE = (1, 3, 4, 300)


def model() -> nn.Module:
    torch.manual_seed(4)
    return nn.Sequential(nn.Conv2d(3, 8, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(),
                         nn.Conv2d(8, 16, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 4)).eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g) * 2 - 1,) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 8)
