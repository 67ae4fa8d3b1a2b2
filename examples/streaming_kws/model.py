"""Streaming keyword spotter: one frame of 10 MFCC features per inference, 49 frames per utterance.

Each call sees one new frame. The model keeps what it needs from the past in registered buffers,
which mcu-gen turns into state tensors kept in the arena between inferences:

- ``frames``: a ring of the last 3 frames (10 features x 3 steps), the receptive field of a causal
  1-D convolution over time (nn.Conv1d, kernel 3, no padding: it only sees the past);
- ``h``: the hidden state of an nn.GRUCell that integrates the convolution's features over the
  utterance.

The head classifies the 12 keywords of Speech Commands after every frame (the last frame's scores
are the utterance's). Weights are seeded, not trained: this example exercises the streaming
pipeline (export, state, RESET, step-by-step verification), not accuracy.
"""
import torch
from torch import nn

FRAMES, FEATURES, CLASSES = 49, 10, 12


class StreamingKws(nn.Module):
    def __init__(self, features=FEATURES, channels=32, hidden=48, classes=CLASSES, kernel=3):
        super().__init__()
        self.register_buffer("frames", torch.zeros(1, features, kernel))
        self.conv = nn.Conv1d(features, channels, kernel)  # causal: over the last `kernel` frames only
        self.cell = nn.GRUCell(channels, hidden)
        self.register_buffer("h", torch.zeros(1, hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, frame):  # frame: (1, 10)
        self.frames.copy_(torch.cat([self.frames[:, :, 1:], frame.unsqueeze(-1)], 2))
        feat = torch.relu(self.conv(self.frames)).flatten(1)  # (1, channels)
        h = self.cell(feat, self.h)
        self.h.copy_(h)
        return self.head(h)


def model():
    torch.manual_seed(0)
    return StreamingKws().eval()


def example_inputs():
    return (torch.randn(1, FEATURES),)


def _utterance(seed):
    """A synthetic utterance: 49 frames of smoothly varying features (seeded)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(1, FEATURES, generator=g)
    drift = torch.randn(1, FEATURES, generator=g) * 0.1
    return [(base + k * drift + 0.3 * torch.randn(1, FEATURES, generator=g),) for k in range(FRAMES)]


def test_sequences():
    return [_utterance(1), _utterance(2)]


def calibration_sequences():
    """int8 calibration: four other synthetic utterances, fed frame by frame with the state carried."""
    return [_utterance(seed) for seed in (100, 101, 102, 103)]
