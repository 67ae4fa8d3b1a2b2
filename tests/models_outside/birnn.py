"""A two-layer bidirectional nn.RNN (ReLU) over 5 steps, the last step's features classified, the final hidden
states returned as well. In int8 the RNN stays an fp32 island (its linears, adds and ReLUs), and its hidden-state
output is a float that nothing quantizes: the device's float32 linear sums in another order than PyTorch's."""
import torch
from torch import nn


class BiRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(6, 8, num_layers=2, bidirectional=True, batch_first=True, nonlinearity="relu")
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        out, h = self.rnn(x)
        return self.fc(out[:, -1]), h


def model():
    torch.manual_seed(0)
    return BiRNN().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 5, 6, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
