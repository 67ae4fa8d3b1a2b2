"""Labelled data for `mcu-gen eval`, and the classification figures computed from a model's scores.

    samples, labels = load_dataset("test.npz", input_shapes)   # .npz (x, y), or torch.save'd [(inputs, label)]
    m = classification_metrics(scores, labels, n_classes, top_k=5)

An .npz holds ``x`` (one input; ``x0``, ``x1``, ... for several) with the samples along the first axis,
and ``y``, the integer labels. A ``torch.save``d file holds a list of ``(inputs, label)`` pairs: inputs a
tensor or a tuple of tensors, label an int or a 0-d tensor. A sample may leave out the batch dimension
of 1 the model takes (an 8x8 image for a 1x1x8x8 input).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mcu_gen.errors import McuGenError
from mcu_gen.reference.inputs import to_numpy


class DatasetError(McuGenError, ValueError):
    """The labelled data cannot be used (missing, another layout than the model takes, bad labels)."""


def _fit(x: np.ndarray, shape: tuple, where: str) -> np.ndarray:
    """One sample in the model input's shape (adding a leading batch dimension of 1 when left out)."""
    x = np.asarray(x)
    if tuple(x.shape) == tuple(shape):
        return x
    if tuple((1,) + x.shape) == tuple(shape):
        return x[None]
    raise DatasetError(f"{where}: shape {tuple(x.shape)}, the model takes {tuple(shape)}")


def _label(y, where: str) -> int:
    y = to_numpy(y)
    if y.size != 1 or not (np.issubdtype(y.dtype, np.integer) or float(y.reshape(-1)[0]).is_integer()):
        raise DatasetError(f"{where}: a label must be one integer (a class index), got {y!r}")
    return int(y.reshape(-1)[0])


def _from_npz(path: Path, shapes: list) -> tuple[list, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        keys = set(z.files)
        names = ["x"] if "x" in keys else [f"x{k}" for k in range(len(shapes))]
        missing = [n for n in names + ["y"] if n not in keys]
        if missing or len(names) != len(shapes):
            raise DatasetError(f"{path}: an .npz for eval holds x (or x0, x1, ... for {len(shapes)} inputs) and y; "
                               f"it has {', '.join(sorted(keys)) or 'nothing'}")
        xs, y = [z[n] for n in names], z["y"]
    n = len(y)
    if any(len(x) != n for x in xs):
        raise DatasetError(f"{path}: x has {', '.join(str(len(x)) for x in xs)} samples, y has {n} labels")
    samples = [tuple(_fit(x[k], s, f"{path}: sample {k}") for x, s in zip(xs, shapes)) for k in range(n)]
    return samples, np.array([_label(v, f"{path}: label {k}") for k, v in enumerate(y)], np.int64)


def _from_pairs(items, shapes: list, where: str) -> tuple[list, np.ndarray]:
    samples, labels = [], []
    for k, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise DatasetError(f"{where}: item {k} is not an (inputs, label) pair")
        x, y = item
        x = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        if len(x) != len(shapes):
            raise DatasetError(f"{where}: item {k} has {len(x)} inputs, the model takes {len(shapes)}")
        samples.append(tuple(_fit(to_numpy(a), s, f"{where}: item {k}") for a, s in zip(x, shapes)))
        labels.append(_label(y, f"{where}: item {k}'s label"))
    return samples, np.array(labels, np.int64)


def load_dataset(data, shapes: list) -> tuple[list, np.ndarray]:
    """(samples: input tuples of numpy arrays in the model's input shapes, labels: int64 array) from a
    path (.npz, or a torch.save'd list of pairs), an (x, y) pair of arrays, or a list of (inputs, label)."""
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.is_file():
            raise DatasetError(f"data file not found: {path}")
        if path.suffix == ".npz":
            samples, labels = _from_npz(path, shapes)
        else:
            import torch

            try:
                items = torch.load(str(path), weights_only=True)
            except Exception as e:
                raise DatasetError(f"{path}: cannot load it (an .npz with x and y, or a torch.save'd list of "
                                   f"(inputs, label) pairs): {type(e).__name__}: {e}") from None
            samples, labels = _from_pairs(items, shapes, str(path))
    elif isinstance(data, tuple) and len(data) == 2 and not isinstance(data[0], tuple) and np.ndim(to_numpy(data[1])) == 1:
        x, y = to_numpy(data[0]), to_numpy(data[1])
        if len(x) != len(y):
            raise DatasetError(f"data: x has {len(x)} samples, y has {len(y)} labels")
        samples = [(_fit(x[k], shapes[0], f"data: sample {k}"),) for k in range(len(y))]
        labels = np.array([_label(v, f"data: label {k}") for k, v in enumerate(y)], np.int64)
    else:
        samples, labels = _from_pairs(list(data), shapes, "data")
    if not len(labels):
        raise DatasetError("the data holds no samples")
    return samples, labels


def top_k_hits(scores: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Per sample, whether its label is among its k highest scores (ties: the lower class first, as argmax)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.any(order == labels[:, None], axis=1)


def classification_metrics(scores: np.ndarray, labels: np.ndarray, n_classes: int, top_k: int | None) -> dict:
    """top-1 (and top-k) accuracy, per-class accuracy and the confusion matrix (rows: label, columns:
    predicted class) of scores [N, n_classes]."""
    pred = np.argmax(scores, axis=1)
    conf = np.zeros((n_classes, n_classes), np.int64)
    np.add.at(conf, (labels, pred), 1)
    per_class = [float(conf[c, c] / conf[c].sum()) if conf[c].sum() else None for c in range(n_classes)]
    out = {"top1": float(np.mean(pred == labels)), "per_class": per_class, "confusion": conf.tolist(),
           "predictions": pred}
    if top_k:
        out[f"top{top_k}"] = float(np.mean(top_k_hits(scores, labels, top_k)))
    return out
