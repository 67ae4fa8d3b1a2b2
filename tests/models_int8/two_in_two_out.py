"""Two inputs and two outputs: an image branch and a feature vector, joined by a broadcasting
mul (gating) and a sub; a regression output and a log_softmax classifier output."""
import torch
from torch import nn

SHAPES = [(1, 3, 10, 10), (1, 6)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.gate = nn.Linear(6, 6)
        self.fc = nn.Linear(6 * 5 * 5, 10)
        self.reg = nn.Linear(6, 2)

    def forward(self, img, feat):
        x = torch.relu(self.conv(img))
        g = torch.sigmoid(self.gate(feat))
        x = x * g.reshape(1, 6, 1, 1)
        x = nn.functional.avg_pool2d(x, 2)
        logits = self.fc(x.flatten(1))
        r = self.reg(feat - g)
        return torch.log_softmax(logits, dim=-1), torch.tanh(r)


def model():
    torch.manual_seed(16)
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
