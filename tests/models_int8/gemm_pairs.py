"""The two-row DSP GEMM's cases (tests/test_generated_firmware.py): 1x1 convolutions with Cout % 8 == 4
(its last block of 4), odd pixel counts (a last single row), K >= 128 (its looped sub-blocks) and a 3x3
convolution with K > 128 (two gathered windows per call)."""
import torch
from torch import nn

INPUT_SHAPE = (1, 16, 5, 7)


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(16, 12, 1), nn.ReLU(),
        nn.Conv2d(12, 20, 1), nn.ReLU6(),
        nn.Conv2d(20, 132, 1), nn.ReLU(),
        nn.Conv2d(132, 36, 1),
        nn.Conv2d(36, 20, 3, padding=1), nn.ReLU(),
    ).eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g) * 2 - 1,) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 8)
