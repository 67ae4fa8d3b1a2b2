"""A two-layer graph convolutional network (Kipf & Welling) over a fixed edge list, written as PyTorch Geometric's
GCNConv computes it: degrees by index_add_ of ones, symmetric normalisation by rsqrt, messages gathered with
index_select and summed into their targets with index_add_."""
import torch
from torch import nn

NODES = 10
EDGES = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 0, 5],
                      [1, 0, 2, 1, 4, 3, 6, 5, 8, 7, 0, 9, 5, 0]])


class GCNConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout)
        self.register_buffer("src", EDGES[0].clone())
        self.register_buffer("dst", EDGES[1].clone())

    def forward(self, x):
        x = self.lin(x)
        deg = torch.zeros(NODES).index_add_(0, self.dst, torch.ones(self.dst.numel())) + 1  # with self loops
        norm = deg.rsqrt()
        msg = x.index_select(0, self.src) * (norm[self.src] * norm[self.dst]).unsqueeze(1)
        out = torch.zeros_like(x).index_add_(0, self.dst, msg)
        return out + x / deg.unsqueeze(1)


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(8, 16)
        self.conv2 = GCNConv(16, 4)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.conv2(x)
        return x.mean(0, keepdim=True).log_softmax(-1)  # a graph-level class


def model():
    torch.manual_seed(0)
    return GCN().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(NODES, 8, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
