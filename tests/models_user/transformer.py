"""torch's own nn.TransformerEncoderLayer over 8 steps with a padding mask."""
import torch
from torch import nn

INPUT_SHAPE = (1, 8, 16)


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True, dropout=0.0)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        mask = torch.zeros(1, 8, dtype=torch.bool)
        mask[:, 6:] = True
        return self.fc(self.layer(x, src_key_padding_mask=mask)[:, 0])


def model():
    torch.manual_seed(0)
    return Enc().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
