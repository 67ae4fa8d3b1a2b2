"""A small transformer block: layer norm, single-head attention (two-activation matmuls,
softmax), residuals, GELU MLP, mean over tokens."""
import torch
from torch import nn

SHAPES = [(1, 8, 16)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(16)
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16)
        self.v = nn.Linear(16, 16)
        self.o = nn.Linear(16, 16)
        self.ln2 = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = self.ln1(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        a = torch.softmax(torch.matmul(q, k.transpose(1, 2)) * 0.25, dim=-1)
        x = x + self.o(torch.matmul(a, v))
        x = x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))
        return self.head(x.mean(dim=1))


def model():
    torch.manual_seed(14)
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
