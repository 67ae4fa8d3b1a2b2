"""`mcu-gen eval`: a labelled dataset through the device, accuracy next to the host's.

    r = eval_model("model.py", data="test.npz", board="mps2-an505", quantize="int8")
    r.accuracy["device"]["top1"], r.accuracy["int8_host"]["top1"], r.accuracy["fp32_host"]["top1"]
    r.agreement                  # device outputs identical to the host integer reference (int8: must be 1.0)

    r = evaluate_link(link, build, samples, labels)   # any Link: QEMU's pty, a board's serial port

Every sample goes through the verify protocol of one session (docs/protocol.md: WRITE_INPUT in
frame-sized chunks, RUN, READ_OUTPUT), with the host's work (PyTorch fp32, the integer reference) done
while the first input frame travels to the device (Link.infer's ``during``). int8 builds: the device's outputs must equal
the integer reference's bit for bit, sample by sample; fp32 builds: PyTorch's within run's tolerance.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from mcu_gen.device.compare import (check_device_quant_params, check_program_id, int8_program_outputs_match,
                                    is_classifier,
                                    verify_outputs)
from mcu_gen.device.session import count_from_ticks
from mcu_gen.reference.dataset import DatasetError, classification_metrics, load_dataset
from mcu_gen.capture.model_file import output_leaves
from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs, to_numpy

TOP_K = 5  # classifiers with more than TOP_K classes also get top-5 accuracy


@dataclass
class EvalResult:
    board: str
    model: str
    quantize: str | None
    io: str
    n_samples: int
    n_classes: int
    top_k: int | None
    # {"fp32_host": {...}, "int8_host": {...}, "device": {...}}: top1, top<k>, per_class (accuracy per label)
    accuracy: dict
    # int8: the share of samples whose device outputs equal the host integer reference bit for bit
    # (must be 1.0); fp32: within run's tolerance of PyTorch
    agreement: float
    top1_agreement: float  # device vs the host reference it must equal: same predicted class
    mismatches: list  # sample indices where the device differed from that reference (the first 20)
    confusion: list  # the device's confusion matrix: rows = label, columns = predicted class
    confusion_files: list = field(default_factory=list)  # PNG / SVG pictures of it
    seconds: float = 0.0  # over the link (all samples)
    samples_per_second: float = 0.0
    instructions_per_inference: int | None = None  # max (QEMU: instructions; hardware: cycles)
    reference: str = ""
    out: str = ""
    labels_seen: list = field(default_factory=list)  # classes present in the labels

    @property
    def verified(self) -> bool:
        return self.agreement == 1.0

    def to_json(self) -> dict:
        d = asdict(self)
        d["verified"] = self.verified
        return d


def _fp32_outputs(module, one: tuple) -> list:
    import torch

    with torch.no_grad():
        out = module(*[torch.from_numpy(np.asarray(x, order="C")) for x in one])
    return [to_numpy(o) for o in output_leaves(out)]


BATCH = 256  # samples PyTorch scores at once (fp32 on the host)


def fp32_scores(module, samples: list, n_classes: int) -> np.ndarray:
    """PyTorch's fp32 scores [N, n_classes], in batches of the samples stacked along the batch axis (one
    sample at a time for a model that does not take a batch)."""
    import torch

    out = np.zeros((len(samples), n_classes))
    for lo in range(0, len(samples), BATCH):
        part = samples[lo:lo + BATCH]
        try:
            with torch.no_grad():
                y = module(*[torch.from_numpy(np.asarray(np.concatenate([one[k] for one in part]), order="C"))
                             for k in range(len(part[0]))])
            y = to_numpy(output_leaves(y)[0]).reshape(len(part), -1)
            if y.shape[1] != n_classes:
                raise ValueError("another shape batched")
            out[lo:lo + len(part)] = y
        except Exception:  # a model that only takes its example's batch size
            for k, one in enumerate(part):
                out[lo + k] = _scores(_fp32_outputs(module, one))
    return out


def _scores(outputs: list) -> np.ndarray:
    return np.asarray(outputs[0], np.float64).reshape(-1)


def check_classifier(program, n_classes_seen: int) -> int:
    """The number of classes the model scores (its one (1, K) output), or a DatasetError."""
    if not is_classifier(program):
        shapes = [tuple(program.tensor(i).shape) for i in program.outputs]
        raise DatasetError(f"eval measures classifiers: one output of shape (1, K), K >= 2 classes; this model's "
                           f"outputs are {', '.join(map(str, shapes))}")
    k = int(program.tensor(program.outputs[0]).shape[1])
    if program.tensor(program.outputs[0]).shape[0] != 1:
        raise DatasetError(f"eval runs one sample per inference: the model's output has batch "
                           f"{program.tensor(program.outputs[0]).shape[0]}, not 1")
    if n_classes_seen > k:
        raise DatasetError(f"the labels go up to {n_classes_seen - 1}, the model scores {k} classes")
    return k


def evaluate_link(link, result, samples: list, labels: np.ndarray, progress=None, top_k: int | None = None,
                  out_dir=None) -> EvalResult:
    """Runs every sample on the device behind `link` and compares it with the host (see the module)."""
    from mcu_gen.device.eval_report import write_eval_files
    from mcu_gen.reference.integer import run_int8_reference

    program, spec, b = result.program, result.spec, result.board
    if labels.min() < 0:
        raise DatasetError(f"labels must be class indices >= 0, found {int(labels.min())}")
    n_classes = check_classifier(program, int(labels.max()) + 1)
    top_k = top_k if top_k is not None else (TOP_K if n_classes > TOP_K else None)
    if top_k is not None and not 1 <= top_k <= n_classes:
        raise DatasetError(f"--top-k {top_k}: choose 1..{n_classes}")
    hello = link.hello()
    check_program_id(hello, result)
    int8 = bool(result.report.get("quantize"))
    if int8:
        check_device_quant_params(hello, program)
    module = None
    if spec is not None:
        module = spec.module if spec.module is not None else spec.exported_program.module()

    def host(one, dev_in):  # what the device must return
        if int8:
            return run_int8_reference(program, dev_in)
        if module is None:
            from mcu_gen.reference import run_reference

            return [np.asarray(o) for o in run_reference(program, list(one))]
        return _fp32_outputs(module, one)

    n = len(samples)
    dev_scores, int8_scores = np.zeros((n, n_classes)), np.zeros((n, n_classes))
    fp_scores = fp32_scores(module, samples, n_classes) if module is not None else np.zeros((n, n_classes))
    same, mismatches, counts = 0, [], []
    start = time.monotonic()
    for k in range(n):
        dev_in = list(quantize_inputs(program, samples[k])) if int8 else list(samples[k])
        box = {}

        def work(one=samples[k], dev_in=dev_in):  # the host's share, while the first input frame travels
            box["host"] = host(one, dev_in)

        got, ticks = link.infer(dev_in, during=work)
        if "host" not in box:
            work()
        want = box["host"]
        counts.append(count_from_ticks(b, ticks))
        ok = int8_program_outputs_match(program, got, want) if int8 else verify_outputs(got, want)[2]
        same += ok
        if not ok and len(mismatches) < 20:
            mismatches.append(k)
        if int8:
            dev_scores[k] = _scores(dequantize_outputs(program, got))
            int8_scores[k] = _scores(dequantize_outputs(program, want))
        else:
            dev_scores[k] = _scores(got)
        if progress:
            progress(k + 1, n)
    seconds = time.monotonic() - start
    accuracy = {}
    rows = [("fp32_host", fp_scores, module is not None), ("int8_host", int8_scores, int8), ("device", dev_scores, True)]
    for name, scores, have in rows:
        if have:
            m = classification_metrics(scores, labels, n_classes, top_k)
            accuracy[name] = {key: m[key] for key in m if key not in ("confusion", "predictions")}
    dev = classification_metrics(dev_scores, labels, n_classes, top_k)
    ref = int8_scores if int8 else (fp_scores if module is not None else dev_scores)
    r = EvalResult(
        board=b.name, model=result.report.get("model", ""), quantize=result.report.get("quantize"),
        io=result.report.get("io", "float32"), n_samples=n, n_classes=n_classes, top_k=top_k,
        accuracy=accuracy, agreement=same / n, mismatches=mismatches,
        top1_agreement=float(np.mean(np.argmax(ref, 1) == dev["predictions"])), confusion=dev["confusion"],
        seconds=seconds, samples_per_second=n / seconds if seconds > 0 else 0.0,
        instructions_per_inference=max(counts) if counts else None,
        reference=("host integer reference, bit for bit" if int8 else
                   "pytorch fp32 (within 1e-4 relative)" if module is not None else "reference interpreter"),
        out=str(out_dir or result.out), labels_seen=sorted(set(int(v) for v in labels)))
    r.confusion_files = write_eval_files(r, out_dir or result.out)
    return r


def default_eval_out(model, board: str):
    """mcu-gen-out/<model>-<board>-eval: beside run's build directory, not over it (eval's I/O may differ)."""
    from pathlib import Path

    from mcu_gen.capture.model_file import ModelSpec, model_name

    name = model.name if isinstance(model, ModelSpec) else model_name(Path(model))
    return Path("mcu-gen-out") / f"{name}-{board}-eval"


def eval_model(model=None, *, data, board: str = "mps2-an505", out=None, quantize=None, io: str | None = None,
               top_k: int | None = None, timeout: float = 60.0, progress=None, port: str | None = None,
               baud: int | None = None, max_samples: int | None = None, **build_options) -> EvalResult:
    """Builds `model` (a model file or a ModelSpec: mcu_gen.eval takes an nn.Module) for `board`, runs every
    sample of `data` on it (QEMU, or the flashed board on `port`) and compares. ``io``: the firmware's I/O
    dtype; int8 builds default to int8 I/O (the host quantizes: 4x fewer bytes over the link per sample,
    the same int8 network; the device's outputs are still compared with the integer reference bit for bit)."""
    from mcu_gen.firmware.builder import build
    from mcu_gen.device.session import ensure_program, open_device

    from pathlib import Path

    if isinstance(data, (str, Path)) and not Path(data).is_file():  # before minutes of building
        raise DatasetError(f"data file not found: {data}")
    io = io or ("int8" if quantize else "float32")
    result = build(model, board=board, out=out if out is not None else default_eval_out(model, board),
                   quantize=quantize, io=io, **build_options)
    shapes = [tuple(result.program.tensor(i).shape) for i in result.program.inputs]
    samples, labels = load_dataset(data, shapes)
    if max_samples is not None:
        samples, labels = samples[:max_samples], labels[:max_samples]
    with open_device(result.board, result.elf, port=port, baud=baud, run_timeout=timeout) as link:
        ensure_program(link, result)
        return evaluate_link(link, result, samples, labels, progress=progress, top_k=top_k)
