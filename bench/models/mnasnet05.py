"""MNASNet-0.5-style network (torchvision's MNASNet layout and depths at width 0.5, written out here
since torchvision is not a dependency): 10 classes on a 1x3x64x64 image. Weights and BatchNorm
statistics are random (seeded); the point is the structure (3x3 / 5x5 depthwise, inverted
residuals, expansion 3 and 6, a 1280-wide head), not the accuracy.
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 3, 64, 64)
ALPHA = 0.5


def _depth(d: int) -> int:
    # torchvision's _round_to_multiple_of(d * alpha, 8), round-up bias 0.9
    v = d * ALPHA
    new = max(8, int(v + 4) // 8 * 8)
    return new if new >= 0.9 * v else new + 8


class _InvertedResidual(nn.Module):
    def __init__(self, cin, cout, kernel, stride, expand):
        super().__init__()
        mid = cin * expand
        self.residual = cin == cout and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, kernel, stride, kernel // 2, groups=mid, bias=False), nn.BatchNorm2d(mid),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.layers(x)
        return x + y if self.residual else y


def _stack(cin, cout, kernel, stride, expand, repeats):
    blocks = [_InvertedResidual(cin, cout, kernel, stride, expand)]
    blocks += [_InvertedResidual(cout, cout, kernel, 1, expand) for _ in range(repeats - 1)]
    return nn.Sequential(*blocks)


class MNASNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        d = [_depth(x) for x in (32, 16, 24, 40, 80, 96, 192, 320)]
        self.layers = nn.Sequential(
            nn.Conv2d(3, d[0], 3, 2, 1, bias=False), nn.BatchNorm2d(d[0]), nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[0], 3, 1, 1, groups=d[0], bias=False), nn.BatchNorm2d(d[0]), nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[1], 1, bias=False), nn.BatchNorm2d(d[1]),
            _stack(d[1], d[2], 3, 2, 3, 3), _stack(d[2], d[3], 5, 2, 3, 3), _stack(d[3], d[4], 5, 2, 6, 3),
            _stack(d[4], d[5], 3, 1, 6, 2), _stack(d[5], d[6], 5, 2, 6, 4), _stack(d[6], d[7], 3, 1, 6, 1),
            nn.Conv2d(d[7], 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        return self.classifier(self.layers(x).mean([2, 3]))


def model() -> nn.Module:
    torch.manual_seed(0)
    net = MNASNet()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.weight.data = 1.0 + 0.1 * torch.randn(n)
            m.bias.data = 0.1 * torch.randn(n)
            m.running_mean = 0.1 * torch.randn(n)
            m.running_var = 0.5 + torch.rand(n)
    return net.eval()


def _inputs(seed: int, count: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 8)
