"""Stateful test model with an integer state: a step counter (int32 buffer, add_ in forward) beside a
float hidden state. With --quantize int8 the counter stays int32 (integers are never quantized: it
counts exactly), the hidden state is int8. Host-side only for now: the portable aten::add.Scalar_out
kernel is float32 only, so on a device the counter's add fails (KernelFailed)."""
import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(1, dtype=torch.int32))
        self.register_buffer("h", torch.zeros(1, 4))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        self.n.add_(1)
        self.h.copy_(torch.tanh(self.fc(x) + self.h * 0.5))
        return self.h * 2.0, self.n + 0


def model():
    torch.manual_seed(0)
    return Counter()


def example_inputs():
    return (torch.randn(1, 4),)


def calibration_sequences():
    g = torch.Generator().manual_seed(1)
    return [[(torch.randn(1, 4, generator=g),) for _ in range(8)] for _ in range(2)]
