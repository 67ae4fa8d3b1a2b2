"""MLPerf Tiny anomaly detection: fully connected autoencoder on 1x640 features
(267,928 torch parameters; 269,992 counting BatchNorm running statistics).

Weights and BatchNorm statistics are random (seeded), so BN folding is exercised.
"""
import torch
from torch import nn

INPUT_SHAPE = (1, 640)
WIDTHS = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]


def _randomize_batchnorm(net: nn.Module) -> None:
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.weight.data = 1.0 + 0.1 * torch.randn(n)
            m.bias.data = 0.1 * torch.randn(n)
            m.running_mean = 0.1 * torch.randn(n)
            m.running_var = 0.5 + torch.rand(n)


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        for cin, cout in zip(WIDTHS[:-1], WIDTHS[1:]):
            layers += [nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU()]
        layers.append(nn.Linear(WIDTHS[-1], WIDTHS[0]))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


def model() -> nn.Module:
    torch.manual_seed(0)
    net = AutoEncoder()
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
