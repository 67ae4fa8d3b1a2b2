"""MLPerf Tiny keyword spotting: DS-CNN on 1x1x49x10 MFCC features (23,756 torch parameters;
24,908 counting BatchNorm running statistics, as Keras does).

Weights and BatchNorm statistics are random (seeded), so BN folding is exercised.
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 1, 49, 10)
CHANNELS = 64


def _randomize_batchnorm(net: nn.Module) -> None:
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.weight.data = 1.0 + 0.1 * torch.randn(n)
            m.bias.data = 0.1 * torch.randn(n)
            m.running_mean = 0.1 * torch.randn(n)
            m.running_var = 0.5 + torch.rand(n)


def _conv_bn_relu(cin, cout, kernel, stride=1, padding=0, groups=1):
    return [nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups), nn.BatchNorm2d(cout), nn.ReLU()]


class DSCNN(nn.Module):
    def __init__(self, classes: int = 12):
        super().__init__()
        layers = _conv_bn_relu(1, CHANNELS, (10, 4), stride=2, padding=(5, 1))
        for _ in range(4):
            layers += _conv_bn_relu(CHANNELS, CHANNELS, 3, padding=1, groups=CHANNELS)  # depthwise
            layers += _conv_bn_relu(CHANNELS, CHANNELS, 1)  # pointwise
        self.features = nn.Sequential(*layers)
        self.dropout = nn.Dropout(0.4)
        self.pool = nn.AvgPool2d((25, 5))
        self.classifier = nn.Linear(CHANNELS, classes)

    def forward(self, x):
        x = self.features(x)
        x = self.dropout(x)
        x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def model() -> nn.Module:
    torch.manual_seed(0)
    net = DSCNN()
    _randomize_batchnorm(net)
    return net.eval()


def _inputs(seed: int, count: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(INPUT_SHAPE, generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 3)


def calibration_inputs():
    return _inputs(3, 8)
