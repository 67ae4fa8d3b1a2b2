"""Integer inputs and integer results inside an int8 program, with no fp32 island: token ids into
an nn.Embedding whose table is int8 (its rows share the table's quantization parameters)."""
import torch
from torch import nn

VOCAB, DIM, SEQ = 16, 8, 6


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        with torch.no_grad():
            self.emb.weight.mul_(0.5)
        self.fc = nn.Linear(DIM, DIM)

    def forward(self, ids, x):
        h = self.fc(self.emb(ids) + x)  # [1, SEQ, DIM]
        return h


def model():
    torch.manual_seed(5)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, VOCAB, (1, SEQ), generator=g), 2 * torch.rand(1, SEQ, DIM, generator=g) - 1)
            for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
