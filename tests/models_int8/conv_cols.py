"""The generated convolutions on widened input columns (conv_cols, mcu_gen/backends/generated/dsp_conv_cols.py;
tests/test_generated_firmware.py): 3x3 of K 144 with stride 1 and 2, a residual block (the second convolution in
place over its input: the ring of rows), Cout % 8 == 4 (the last block of 4), Cin 20 (an odd count of input words
per column), no padding, a 5x5 kernel of K 300 (the looped sub-blocks), output widths that the chunk does not
divide, and a 3x2 convolution of odd output width (the gathered windows, as before)."""
import torch
from torch import nn

INPUT_SHAPE = (1, 16, 6, 20)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(16, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 20, 3, stride=2, padding=1)
        self.c4 = nn.Conv2d(20, 12, 3)
        self.c5 = nn.Conv2d(12, 8, 5, padding=2)
        self.c6 = nn.Conv2d(8, 8, (3, 2), padding=(1, 0))

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y) + x)
        y = torch.relu(self.c3(y))
        y = torch.relu(self.c4(y))
        y = self.c5(y)
        return self.c6(y)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Model().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g) * 2 - 1,) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 8)
