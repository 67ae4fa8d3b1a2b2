"""Token classifier: nn.Embedding over int64 ids, mean over time, linear."""
import torch
from torch import nn

INPUT_SHAPE = (1, 12)


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.fc = nn.Linear(16, 3)

    def forward(self, ids):
        return self.fc(torch.relu(self.emb(ids)).mean(dim=1))


def model():
    torch.manual_seed(0)
    return Tokens().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, 50, INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
