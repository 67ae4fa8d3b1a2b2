"""A small sequence model on the scatter/shape kernels: each step attends to the previous steps
(roll for the one-step shift, tril for the causal mask), the attended features are pooled into
4 time bins with scatter_add, the first bin is re-weighted with select_scatter, and windows of the
score diagonal (diagonal + unfold) join the pooled features in a linear classifier."""
import torch
from torch import nn

INPUT_SHAPE = (1, 16, 8)  # (batch, time, features)


class ScatterMix(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.fc = nn.Linear(4 * 8 + 4 * 4, 5)
        self.register_buffer("bins", (torch.arange(16) // 4).view(1, 16, 1).expand(1, 16, 8).clone())

    def forward(self, x):
        h = torch.tanh(self.proj(x))
        prev = torch.roll(h, 1, dims=1)
        scores = torch.tril(h @ prev.transpose(1, 2)) * 0.35
        att = torch.softmax(scores, dim=-1)
        y = att @ h
        pooled = torch.zeros(1, 4, 8).scatter_add(1, self.bins, y)
        pooled = torch.select_scatter(pooled, pooled[:, 0] * 0.5, 1, 0)
        windows = torch.diagonal(scores, 0, 1, 2).unfold(1, 4, 4)
        return self.fc(torch.cat([pooled.flatten(1), windows.flatten(1)], 1))


def model():
    torch.manual_seed(0)
    return ScatterMix().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
