"""MLPerf Tiny image classification: ResNet-8 on 1x3x32x32 (78,186 torch parameters;
78,666 counting BatchNorm running statistics).

Weights and BatchNorm statistics are random (seeded), so BN folding is exercised.
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 3, 32, 32)


def _randomize_batchnorm(net: nn.Module) -> None:
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.weight.data = 1.0 + 0.1 * torch.randn(n)
            m.bias.data = 0.1 * torch.randn(n)
            m.running_mean = 0.1 * torch.randn(n)
            m.running_var = 0.5 + torch.rand(n)


class ResidualStack(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        # Keras reference: a strided 1x1 convolution (no BN) when the shape changes.
        self.shortcut = nn.Conv2d(cin, cout, 1, stride) if (stride != 1 or cin != cout) else nn.Identity()

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class ResNet8(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1)
        self.bn = nn.BatchNorm2d(16)
        self.stack1 = ResidualStack(16, 16, 1)
        self.stack2 = ResidualStack(16, 32, 2)
        self.stack3 = ResidualStack(32, 64, 2)
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = self.stack3(self.stack2(self.stack1(x)))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


def model() -> nn.Module:
    torch.manual_seed(0)
    net = ResNet8()
    _randomize_batchnorm(net)
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
