"""Audio front end: STFT magnitude of the waveform (a complex tensor inside: mcu-gen's FFT kernel on (re, im)
pairs), log, per-utterance normalisation, linear classifier."""
import torch
from torch import nn

INPUT_SHAPE = (1, 336)  # 20 frames of a 32-point STFT, hop 16


class Frontend(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(32))
        self.fc = nn.Linear(17 * 20, 6)

    def forward(self, x):
        spec = torch.stft(x, 32, hop_length=16, window=self.window, center=False, return_complex=True)
        y = torch.log(spec.abs() + 1e-3)
        y = (y - y.mean(dim=-1, keepdim=True)) * torch.rsqrt(y.var(dim=-1, keepdim=True) + 1e-5)
        y = y / (y.abs().amax() + 1e-3)
        return self.fc(y.flatten(1))


def model():
    torch.manual_seed(0)
    return Frontend().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(INPUT_SHAPE, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
