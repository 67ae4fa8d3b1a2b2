"""MNIST CNN: conv8-pool-conv16-pool-fc10 on a 1x1x28x28 image (5,258 parameters).

Weights are random (seeded); the point is the structure, not the accuracy.
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 1, 28, 28)


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 10),
    ).eval()


def _inputs(seed: int, count: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 8)
