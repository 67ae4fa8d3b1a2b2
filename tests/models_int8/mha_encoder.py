"""A keyword-transformer-style encoder over 1 x 16 x 10 features: a Linear embedding per frame, a class token and
learned positions (cat, add), one nn.TransformerEncoderLayer (pre-norm, 2 heads, feed-forward 32, GELU,
batch_first) and a 6-class head on the class token. nn.MultiheadAttention calls scaled_dot_product_attention;
without a mask it runs as int8 matmuls and the int8 softmax (mcu_gen/quantize/capture.py: expand_attention)."""
import torch
from torch import nn

SHAPES = [(1, 16, 10)]


class Net(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Linear(10, d)
        self.cls = nn.Parameter(0.1 * torch.randn(1, 1, d))
        self.pos = nn.Parameter(0.1 * torch.randn(1, 17, d))
        layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(d, 6)

    def forward(self, x):
        x = self.embed(x)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.encoder(x)[:, 0])


def model():
    torch.manual_seed(23)
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
