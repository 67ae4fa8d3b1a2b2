"""ConvNeXt-style blocks over 3 x 32 x 32: a 4x4 stride-4 patchify stem, a 7x7 depthwise convolution, LayerNorm over
the channels of the channels-last view (x.permute(0, 2, 3, 1)), Linear 4x wider, GELU, Linear back and a residual
add, a 2x2 stride-2 downsampling convolution, a second block, a mean over the pixels and a 10-class head. The
Linear layers run over 4-dim [N, H, W, C] tensors: their outputs are in logical order, not the convolutions'
channels-last order (a cortex_m::quantized_linear over a channels-last output failed on the device)."""
import torch
from torch import nn

SHAPES = [(1, 3, 32, 32)]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.down(nn.functional.gelu(self.up(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 4, 4)
        self.block1 = Block(24)
        self.downsample = nn.Conv2d(24, 48, 2, 2)
        self.block2 = Block(48)
        self.head = nn.Linear(48, 10)

    def forward(self, x):
        x = self.block2(self.downsample(self.block1(self.stem(x))))
        return self.head(x.mean(dim=(2, 3)))


def model():
    torch.manual_seed(4)
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
