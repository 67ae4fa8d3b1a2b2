"""conv2d with padding="same", chunk into two halves (an fp32 island: split), gated by relu * sigmoid,
permute to channels-last order and a linear head."""
import torch
from torch import nn
SHAPES = [(1, 8, 6, 6)]
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(8, 8, 3, padding="same"); self.fc = nn.Linear(4 * 36, 3)
    def forward(self, x):
        a, b = torch.chunk(self.c(x), 2, dim=1)
        y = torch.relu(a) * torch.sigmoid(b)
        y = y.permute(0, 2, 3, 1).reshape(1, -1)
        return self.fc(y)
def model():
    torch.manual_seed(1); return Net().eval()

def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [tuple(2 * torch.rand(s, generator=g) - 1 for s in SHAPES) for _ in range(count)]
def example_inputs(): return _inputs(1, 1)[0]
def test_inputs(): return _inputs(2, 2)
def calibration_inputs(): return _inputs(3, 8)
