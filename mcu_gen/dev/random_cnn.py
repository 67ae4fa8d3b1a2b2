"""Random small CNNs from a seed, as self-contained model files (bench/sweep_random_cnn.py, tests/test_random_cnn.py).

spec(seed) draws the network: the input (1-8 channels, 5-49 x 5-49 pixels), a stem convolution, 2-5 blocks and
a head; model_source(seed) writes it as a model file that needs only torch (the spec is a literal in it and
its Net walks the spec), so a network that fails can be kept as it is as a regression model.
"""
from __future__ import annotations

import random

ACTS = ("relu", "relu6", "none")
BLOCKS = ("dw_sep", "conv3", "pw", "residual", "pool")


def _channels(rng: random.Random) -> int:
    """Mostly multiples of 4 (the generated kernels' blocks), else any count from 1 to 40 (the library's)."""
    return rng.choice([4 * rng.randrange(1, 17), 4 * rng.randrange(1, 17), 8 * rng.randrange(1, 13),
                       rng.randrange(1, 41), 2 * rng.randrange(0, 20) + 1])


def _out(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


def spec(seed: int) -> dict:
    """{"input": [C, H, W], "layers": [...], "classes": n}; each layer a dict with "op" and its parameters."""
    rng = random.Random(seed)
    # The depthwise kernels from a stream of their own, so that the rest of a seed's network is what it was before
    # 5x5 depthwise layers were drawn (2026-12-06).
    rng_dw = random.Random(seed + 1_000_003)
    c, h, w = rng.choice([1, 2, 3, 3, 4, 5, 8]), rng.randrange(5, 50), rng.randrange(5, 50)
    shape = [c, h, w]
    layers = []
    k = rng.choice([1, 3, 3, 5])
    stride = rng.choice([1, 2]) if min(h, w) > 2 * k else 1
    pad = rng.choice([0, k // 2])
    co = _channels(rng)
    layers.append(dict(op="conv", cin=c, cout=co, k=k, stride=stride, pad=pad, act=rng.choice(ACTS)))
    c, h, w = co, _out(h, k, stride, pad), _out(w, k, stride, pad)
    for _ in range(rng.randrange(2, 6)):
        kind = rng.choice(BLOCKS)
        if kind == "pool" and min(h, w) < 4:
            kind = "pw"
        if kind in ("dw_sep", "conv3") and min(h, w) < 3:
            kind = "pw"
        if kind == "dw_sep":
            stride = rng.choice([1, 2])
            pad = rng.choice([0, 1, 1])
            co = _channels(rng)
            dk = rng_dw.choice([3, 3, 3, 5]) if min(h, w) >= 5 else 3
            pad = pad * (dk // 2)
            layers.append(dict(op="conv", cin=c, cout=c, k=dk, stride=stride, pad=pad, groups=c,
                               act=rng.choice(ACTS)))
            h, w = _out(h, dk, stride, pad), _out(w, dk, stride, pad)
            layers.append(dict(op="conv", cin=c, cout=co, k=1, stride=1, pad=0, act=rng.choice(ACTS)))
            c = co
        elif kind == "conv3":
            stride = rng.choice([1, 1, 2])
            co = _channels(rng)
            layers.append(dict(op="conv", cin=c, cout=co, k=3, stride=stride, pad=1, act=rng.choice(ACTS)))
            c, h, w = co, _out(h, 3, stride, 1), _out(w, 3, stride, 1)
        elif kind == "pw":
            co = _channels(rng)
            layers.append(dict(op="conv", cin=c, cout=co, k=1, stride=1, pad=0, act=rng.choice(ACTS)))
            c = co
        elif kind == "residual":
            k = rng.choice([1, 3])
            layers.append(dict(op="residual", c=c, k=k, act=rng.choice(ACTS)))
        else:
            layers.append(dict(op=rng.choice(["maxpool", "avgpool"])))
            h, w = h // 2, w // 2
    return {"input": shape, "layers": layers, "classes": rng.randrange(2, 11)}


def describe(seed: int) -> str:
    s = spec(seed)
    parts = [f"{'x'.join(map(str, s['input']))}"]
    for l in s["layers"]:
        if l["op"] == "conv":
            dw = "dw" if l.get("groups", 1) > 1 else ""
            parts.append(f"{dw}conv{l['k']}x{l['k']}/{l['stride']}p{l['pad']}->{l['cout']}"
                         + ("" if l["act"] == "none" else f"+{l['act']}"))
        elif l["op"] == "residual":
            parts.append(f"res{l['k']}x{l['k']}" + ("" if l["act"] == "none" else f"+{l['act']}"))
        else:
            parts.append(l["op"])
    return " ".join(parts) + f" fc{s['classes']}"


MODEL_FILE = '''"""Random CNN {seed} of mcu_gen/dev/random_cnn.py: {description}"""
import torch
from torch import nn

SPEC = {spec!r}


def _act(name):
    return {{"relu": nn.ReLU(), "relu6": nn.ReLU6(), "none": nn.Identity()}}[name]


class Residual(nn.Module):
    def __init__(self, c, k, act):
        super().__init__()
        self.conv = nn.Conv2d(c, c, k, padding=k // 2)
        self.act = _act(act)

    def forward(self, x):
        return self.act(x + self.conv(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        body = []
        for l in SPEC["layers"]:
            if l["op"] == "conv":
                body += [nn.Conv2d(l["cin"], l["cout"], l["k"], stride=l["stride"], padding=l["pad"],
                                   groups=l.get("groups", 1)), _act(l["act"])]
            elif l["op"] == "residual":
                body.append(Residual(l["c"], l["k"], l["act"]))
            elif l["op"] == "maxpool":
                body.append(nn.MaxPool2d(2))
            else:
                body.append(nn.AvgPool2d(2))
        self.body = nn.Sequential(*body)
        last = [l for l in SPEC["layers"] if l["op"] in ("conv", "residual")][-1]
        self.fc = nn.Linear(last.get("cout", last.get("c")), SPEC["classes"])

    def forward(self, x):
        return self.fc(self.body(x).mean(dim=(2, 3)))


def model():
    torch.manual_seed({seed})
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(2 * torch.rand(1, *SPEC["input"], generator=g) - 1,) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
'''


def model_source(seed: int) -> str:
    return MODEL_FILE.format(seed=seed, description=describe(seed), spec=spec(seed))
