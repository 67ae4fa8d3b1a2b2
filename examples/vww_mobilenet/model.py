"""MLPerf Tiny visual wake words: MobileNetV1 (alpha 0.25) on 1x3x96x96, 2 classes
(216,322 torch parameters; 221,794 counting BatchNorm running statistics).

Weights and BatchNorm statistics are random (seeded), so BN folding is exercised.
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 3, 96, 96)
# (output channels, stride) of the 13 depthwise-separable blocks, alpha = 0.25.
BLOCKS = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]


def _randomize_batchnorm(net: nn.Module) -> None:
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.weight.data = 1.0 + 0.1 * torch.randn(n)
            m.bias.data = 0.1 * torch.randn(n)
            m.running_mean = 0.1 * torch.randn(n)
            m.running_var = 0.5 + torch.rand(n)


def _conv_bn_relu(cin, cout, kernel, stride=1, groups=1):
    return [
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    ]


class MobileNetV1(nn.Module):
    def __init__(self, classes: int = 2):
        super().__init__()
        layers = _conv_bn_relu(3, 8, 3, stride=2)
        cin = 8
        for cout, stride in BLOCKS:
            layers += _conv_bn_relu(cin, cin, 3, stride, groups=cin)  # depthwise
            layers += _conv_bn_relu(cin, cout, 1)  # pointwise
            cin = cout
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d(3)
        self.classifier = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def model() -> nn.Module:
    torch.manual_seed(0)
    net = MobileNetV1()
    _randomize_batchnorm(net)
    return net.eval()


def _inputs(seed: int, count: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(INPUT_SHAPE, generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
