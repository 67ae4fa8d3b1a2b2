"""A small CNN trained on scikit-learn's handwritten digits (8x8, 1,797 images, shipped inside
scikit-learn: no download): conv8-pool-conv16-pool-fc10 on a 1x1x8x8 image (2,090 parameters).

Training takes about a second on one core and is the same every time (seed 0, one thread, the
same split): 1,437 training images, 360 test images (the last 20%, stratified by sklearn's
train_test_split with random_state=0).

    mcu-gen run  --model examples/digits/model.py --quantize int8
    python examples/digits/model.py digits_test.npz        # the test split as an .npz (x, y)
    mcu-gen eval --model examples/digits/model.py --quantize int8 --data digits_test.npz
"""
import functools
import sys

import numpy as np
import torch
from torch import nn

INPUT_SHAPE = (1, 1, 8, 8)
EPOCHS = 12
SEED = 0


@functools.lru_cache(maxsize=1)
def split() -> tuple:
    """(x_train, y_train, x_test, y_test): float32 images in [0, 1] shaped [N, 1, 8, 8], int64 labels."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    xtr, xte, ytr, yte = train_test_split(x, d.target.astype(np.int64), test_size=0.2, random_state=SEED,
                                          stratify=d.target)
    return xtr, ytr, xte, yte


def _net() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 10))


@functools.lru_cache(maxsize=1)
def _trained_state() -> dict:
    xtr, ytr, _, _ = split()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums, so the same weights, on every machine
    try:
        torch.manual_seed(SEED)
        net = _net()
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        x, y = torch.from_numpy(xtr), torch.from_numpy(ytr)
        g = torch.Generator().manual_seed(SEED)
        for _ in range(EPOCHS):
            for idx in torch.randperm(len(x), generator=g).split(64):
                opt.zero_grad()
                nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
                opt.step()
    finally:
        torch.set_num_threads(threads)
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def model() -> nn.Module:
    net = _net()
    net.load_state_dict(_trained_state())
    return net.eval()


def example_inputs():
    return (torch.from_numpy(split()[0][:1]),)


def calibration_inputs():
    """32 training images (never the test split)."""
    xtr = split()[0]
    return [(torch.from_numpy(xtr[k:k + 1]),) for k in range(0, 32 * 40, 40)]


def test_data() -> tuple:
    """The test split: (x [360, 1, 8, 8] float32, y [360] int64)."""
    _, _, xte, yte = split()
    return xte, yte


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "digits_test.npz"
    xte, yte = test_data()
    np.savez(out, x=xte, y=yte)
    print(f"wrote {out}: {len(yte)} images {xte.shape[1:]}, labels {sorted(set(yte.tolist()))}")
