"""Integer inputs and integer results inside an int8 program, with no fp32 island: token ids into
an nn.Embedding whose table is int8 (its rows share the table's quantization parameters); argmax /
argmin, max / min over a dim and topk ranking int8 codes directly (values with the input's
parameters, int64 indices), the indices fed to another embedding and returned; comparisons with
numbers and of two tensors (bool results) and where on int8 operands; sums over dims; PReLU. The test inputs' values are
0.25 apart (a permutation per row), so int8 ranks them as fp32 does."""
import torch
from torch import nn

VOCAB, DIM, SEQ = 16, 8, 6


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(DIM, DIM)
        with torch.no_grad():
            self.emb.weight.mul_(0.5)
            self.pos.weight.mul_(0.5)
        self.fc = nn.Linear(DIM, DIM)
        self.gate = nn.Linear(DIM, DIM)
        self.prelu = nn.PReLU(SEQ)
        with torch.no_grad():
            self.prelu.weight.copy_(torch.linspace(-0.5, 1.5, SEQ))

    def forward(self, ids, x):
        v, top = x.topk(3, dim=-1)  # [1, SEQ, 3]
        m, i = x.max(dim=1)  # [1, DIM]
        n, _ = x.min(dim=-1, keepdim=True)  # [1, SEQ, 1]
        a = x.argmax(dim=-1)  # [1, SEQ]
        b = x.argmin(dim=1)  # [1, DIM]
        h = self.fc(self.emb(ids) + self.pos(a))  # [1, SEQ, DIM]
        z = self.pos(b) + m.unsqueeze(-1)  # [1, DIM, DIM]
        w = torch.where(x > 0.1, x, self.gate(x))  # a mask from a number, where on int8
        left = x[:, :, :4] > x[:, :, 4:]  # two int8 tensors compared
        # int32 sums requantized (parameters of their own): over one dim, two dims, all of them
        sums = torch.cat([h.sum(dim=1), z.sum((0, 2)).unsqueeze(0), h.sum().reshape(1, 1) * 0.1], dim=-1)
        return self.prelu(h + n), v, z, top, i, w, left, x.le(-0.5), x.eq(-0.3), sums


def model():
    torch.manual_seed(5)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        x = torch.stack([torch.randperm(DIM, generator=g) for _ in range(SEQ)]).float() * 0.25 - 0.875
        out.append((torch.randint(0, VOCAB, (1, SEQ), generator=g), x.unsqueeze(0)))
    return out


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
