"""A SegNet-style encoder-decoder (Badrinarayanan et al.): max_pool2d with return_indices in the encoder,
max_unpool2d with those indices (and output_size) in the decoder, BatchNorm, per-pixel softmax over 4 classes."""
import torch
from torch import nn
import torch.nn.functional as F


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = conv_bn_relu(3, 8)
        self.enc2 = conv_bn_relu(8, 16)
        self.dec2 = conv_bn_relu(16, 8)
        self.dec1 = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        x = self.enc1(x)
        size1 = x.size()
        x, idx1 = F.max_pool2d(x, 2, 2, return_indices=True)
        x = self.enc2(x)
        size2 = x.size()
        x, idx2 = F.max_pool2d(x, 2, 2, return_indices=True)
        x = F.max_unpool2d(x, idx2, 2, 2, output_size=size2)
        x = self.dec2(x)
        x = F.max_unpool2d(x, idx1, 2, 2, output_size=size1)
        return F.softmax(self.dec1(x), dim=1)


def model():
    torch.manual_seed(0)
    return SegNet().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(1, 3, 16, 16, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
