"""Two methods sharing weights (issue 19 item 4): ``encode`` maps a 1x16 input to a 1x8 code through
the shared encoder; ``classify`` runs the same encoder and a head. Their shared weights are stored
once in the program's constant segment."""
import torch
from torch import nn


class EncodeClassify(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
        self.head = nn.Linear(8, 4)

    def encode(self, x):
        return torch.tanh(self.enc(x))

    def classify(self, x):
        return torch.softmax(self.head(torch.tanh(self.enc(x))), dim=-1)

    def forward(self, x):
        return self.classify(x)


def model():
    torch.manual_seed(0)
    return EncodeClassify()


def methods(net):
    x = torch.randn(1, 16)
    return {"encode": (net.encode, (x,)), "classify": (net.classify, (x,))}
