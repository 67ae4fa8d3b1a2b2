"""ShuffleNetV2-style units: chunk into two halves along the channels, one half through pointwise / depthwise /
pointwise convolutions, concat, channel shuffle (view to 5 dims, transpose, contiguous, view back); then
torch.split with sizes along the channels, and unbind of a pooled [N, 4, 4] head whose rows are added."""
import torch
from torch import nn

SHAPES = [(1, 3, 16, 16)]


def shuffle(x, groups):
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(n, -1, h, w)


class Unit(nn.Module):
    def __init__(self, c):
        super().__init__()
        b = c // 2
        self.branch = nn.Sequential(nn.Conv2d(b, b, 1), nn.ReLU(), nn.Conv2d(b, b, 3, 1, 1, groups=b),
                                    nn.Conv2d(b, b, 1), nn.ReLU())

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        return shuffle(torch.cat((x1, self.branch(x2)), dim=1), 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.units = nn.Sequential(Unit(16), Unit(16))
        self.side = nn.Conv2d(4, 4, 3, 1, 1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = self.units(torch.relu(self.stem(x)))
        a, b = torch.split(x, [4, 12], dim=1)
        x = torch.cat([torch.relu(self.side(a)), b], 1)
        rows = x.mean((2, 3)).view(-1, 4, 4).unbind(1)
        return self.fc(rows[0] + rows[1] - rows[3])


def model():
    torch.manual_seed(17)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [tuple(2 * torch.rand(s, generator=g) - 1 for s in SHAPES) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
