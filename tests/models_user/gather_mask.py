"""Advanced indexing: columns picked by an int64 index input (`h[:, idx]`, aten::index.Tensor with a None
entry), small activations zeroed through a bool mask (`h[h.abs() < t] = 0`, aten::index_put), rows picked
by a constant index (`h[[...]]`), then a linear layer."""
import torch
from torch import nn

N_FEATURES = 16
N_PICKED = 6


class GatherMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, N_FEATURES)
        self.fc2 = nn.Linear(N_PICKED, 3)
        self.register_buffer("rows", torch.tensor([3, 0, 2, 2, -1]))

    def forward(self, x, idx):
        h = self.fc1(x)                # [4, 16]
        h = h[:, idx]                  # [4, 6]: columns chosen by the input
        h[h.abs() < 0.25] = 0.0        # index_put with a bool mask
        h = h[self.rows]               # [5, 6]: rows by a constant index
        return self.fc2(torch.relu(h))


def model():
    torch.manual_seed(0)
    return GatherMask().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 8, generator=g), torch.randint(-N_FEATURES, N_FEATURES, (N_PICKED,), generator=g))
            for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 16)
