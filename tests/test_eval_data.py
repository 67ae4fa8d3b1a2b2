"""Host side of `mcu-gen eval` and of run's in-distribution inputs (issue 28): labelled data files,
the classification figures, the confusion-matrix pictures, inputs drawn like the calibration data
(floats, token ids, bools), and the errors bad data gets. No device here: tests/test_eval.py runs
the digits set on QEMU."""
import struct
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest
import torch

from mcu_gen.reference.dataset import DatasetError, classification_metrics, load_dataset, top_k_hits
from mcu_gen.reference.inputs import in_distribution_inputs, matched_inputs, sequence_steps


def test_npz_and_torch_pairs_load_to_the_model_input_shape(tmp_path):
    x = np.random.RandomState(0).rand(5, 1, 8, 8).astype(np.float32)
    y = np.array([0, 1, 2, 1, 0])
    np.savez(tmp_path / "d.npz", x=x, y=y)
    samples, labels = load_dataset(tmp_path / "d.npz", [(1, 1, 8, 8)])
    assert len(samples) == 5 and samples[3][0].shape == (1, 1, 8, 8) and np.array_equal(samples[3][0][0], x[3])
    assert labels.tolist() == [0, 1, 2, 1, 0]
    torch.save([(torch.from_numpy(x[k]), int(y[k])) for k in range(5)], tmp_path / "d.pt")  # no batch dim
    s2, l2 = load_dataset(tmp_path / "d.pt", [(1, 1, 8, 8)])
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(samples, s2)) and l2.tolist() == labels.tolist()
    s3, l3 = load_dataset((x, torch.from_numpy(y)), [(1, 1, 8, 8)])  # arrays, as mcu_gen.eval takes
    assert len(s3) == 5 and l3.tolist() == labels.tolist()
    np.savez(tmp_path / "two.npz", x0=x, x1=x[:, :, :, :4], y=y)  # several inputs: x0, x1
    s4, _ = load_dataset(tmp_path / "two.npz", [(1, 1, 8, 8), (1, 1, 8, 4)])
    assert s4[0][1].shape == (1, 1, 8, 4)


@pytest.mark.parametrize("make, message", [
    (lambda p: np.savez(p, x=np.zeros((3, 1, 8, 8)), labels=np.zeros(3)), "holds x .* and y; it has labels, x"),
    (lambda p: np.savez(p, x=np.zeros((3, 1, 7, 8)), y=np.zeros(3, int)), r"sample 0: shape \(1, 7, 8\), the model takes \(1, 1, 8, 8\)"),
    (lambda p: np.savez(p, x=np.zeros((3, 1, 8, 8)), y=np.zeros(2, int)), "x has 3 samples, y has 2 labels"),
    (lambda p: np.savez(p, x=np.zeros((2, 1, 8, 8)), y=np.array([0.5, 1.0])), "label 0: a label must be one integer"),
])
def test_bad_data_files_get_a_clear_error(tmp_path, make, message):
    path = tmp_path / "bad.npz"
    make(path)
    with pytest.raises(DatasetError, match=message):
        load_dataset(path, [(1, 1, 8, 8)])


def test_bad_pairs_and_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="data file not found"):
        load_dataset(tmp_path / "none.npz", [(1, 4)])
    torch.save([torch.zeros(1, 4)], tmp_path / "p.pt")
    with pytest.raises(DatasetError, match=r"item 0 is not an \(inputs, label\) pair"):
        load_dataset(tmp_path / "p.pt", [(1, 4)])
    torch.save([((torch.zeros(1, 4), torch.zeros(1, 4)), 1)], tmp_path / "q.pt")
    with pytest.raises(DatasetError, match="item 0 has 2 inputs, the model takes 1"):
        load_dataset(tmp_path / "q.pt", [(1, 4)])


def test_classification_metrics_count_what_they_should():
    scores = np.array([[0.9, 0.1, 0.0], [0.2, 0.7, 0.1], [0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    labels = np.array([0, 1, 1, 2])
    m = classification_metrics(scores, labels, 3, top_k=2)
    assert m["top1"] == 0.75 and m["top2"] == 1.0
    assert m["confusion"] == [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    assert m["per_class"] == [1.0, 0.5, 1.0]
    assert top_k_hits(scores, labels, 1).tolist() == [True, True, False, True]
    assert classification_metrics(scores, np.array([0, 0, 0, 0]), 3, None)["per_class"][1] is None  # no samples


def _png_size(data: bytes) -> tuple:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    crc = struct.unpack(">I", data[16 + length:20 + length])[0]
    assert crc == zlib.crc32(data[12:16 + length]) & 0xFFFFFFFF
    return w, h


def svg_class_labels(path) -> set:
    """The tick labels of a confusion-matrix SVG (text kept as text)."""
    root = ET.parse(path).getroot()
    texts = ["".join(t.itertext()).strip() for t in root.iter() if t.tag.endswith("text")]
    return {t for t in texts if t.isdigit()}, texts


def test_confusion_pictures_are_valid_png_and_svg_with_every_class(tmp_path):
    from mcu_gen.device.eval_report import write_confusion

    m = np.diag([5, 4, 3, 2]).tolist()
    m[1][2] = 7
    files = write_confusion(m, "title", [tmp_path / "c.png", tmp_path / "c.svg"])
    w, h = _png_size((tmp_path / "c.png").read_bytes())
    assert w > 200 and h > 200
    labels, texts = svg_class_labels(tmp_path / "c.svg")
    assert {"0", "1", "2", "3"} <= labels and "7" in texts  # the classes' ticks and the off-diagonal count
    again = tmp_path / "again.svg"
    write_confusion(m, "title", [again])
    assert again.read_bytes() == (tmp_path / "c.svg").read_bytes()  # reproducible: no dates, fixed ids
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        write_confusion(m, "t", [tmp_path / "c.jpg"])
    assert files == [str(tmp_path / "c.png"), str(tmp_path / "c.svg")]


# -- in-distribution inputs ----------------------------------------------------------------------
def test_matched_inputs_keep_range_dtype_and_token_ids():
    g = torch.Generator().manual_seed(0)
    images = [(torch.rand(1, 3, 4, 4, generator=g), torch.randint(3, 17, (1, 6), generator=g),
               torch.rand(1, 2, generator=g) > 0.5) for _ in range(5)]
    drawn = matched_inputs(images, 20, seed=1)
    pool_ids = {int(v) for one in images for v in one[1].reshape(-1)}
    for img, ids, mask in drawn:
        assert img.shape == (1, 3, 4, 4) and img.dtype == np.float32 and 0.0 <= img.min() and img.max() < 1.0
        assert ids.dtype == np.int64 and set(ids.reshape(-1).tolist()) <= pool_ids  # never an unseen index
        assert mask.dtype == np.bool_
    ids_all = np.concatenate([d[1].reshape(-1) for d in drawn])
    assert ids_all.min() >= 3 and ids_all.max() <= 16
    assert matched_inputs(images, 3, seed=1)[0][0].tobytes() == drawn[0][0].tobytes()  # seeded
    seen = [one[1].numpy().tolist() for one in images]
    assert all(d[1].tolist() in seen for d in drawn)  # integer tensors drawn whole: an EmbeddingBag's offsets stay
    assert len({str(d[1].tolist()) for d in drawn}) > 1  # ordered, lengths match their sequences


class _Spec:
    def __init__(self, calib=None, held=None, example=None, seqs=None):
        self.calibration_inputs, self.held_out_inputs = calib, held
        self.example_inputs = example if example is not None else (torch.zeros(1, 4),)
        self.calibration_sequences = seqs


def test_in_distribution_inputs_say_where_they_come_from():
    calib = [(torch.rand(1, 4) * 0.1,) for _ in range(6)]
    held = [(torch.full((1, 4), 0.05),)]
    sets, what = in_distribution_inputs(_Spec(calib, held), None, 3, quantized=True)
    assert what == ("1 held-out calibration sample (not calibrated on) + 2 inputs drawn from the calibration "
                    "inputs' values, per tensor")
    assert np.array_equal(sets[0][0], held[0][0].numpy())
    assert all(0.0 <= s[0].min() and s[0].max() <= 0.1 for s in sets)
    sets, what = in_distribution_inputs(_Spec(calib), None, 3, quantized=False)  # fp32: the samples themselves
    assert what == "3 calibration samples" and np.array_equal(sets[2][0], calib[2][0].numpy())
    ex = (torch.tensor([[7, 9, 11]]),)
    sets, what = in_distribution_inputs(_Spec(example=ex), None, 4, quantized=False)
    assert what == "4 inputs drawn from the example input's values, per tensor"
    assert all(set(s[0].reshape(-1).tolist()) <= {7, 9, 11} for s in sets)
    steps, what = sequence_steps(_Spec(seqs=[[(torch.ones(1, 2),), (torch.ones(1, 2) * 2,)]]), None, 5)
    assert len(steps) == 5 and what == "one sequence of 5 steps drawn from the calibration steps' values"
    assert all(set(s[0].reshape(-1).tolist()) <= {1.0, 2.0} for s in steps)


def test_eval_counts_a_device_that_differs_by_one_bit(tmp_path):
    """evaluate_link's bookkeeping against a stand-in device that answers with the host integer reference
    except for one flipped bit on sample 3 (the QEMU tests in test_eval.py run the real one): agreement
    39/40, the mismatch named, not verified; the accuracy rows are still computed."""
    from types import SimpleNamespace

    from mcu_gen.device.evaluate import evaluate_link
    from mcu_gen.firmware.builder import build
    from mcu_gen.reference.integer import run_int8_reference

    pytest.importorskip("sklearn")
    from tests.test_eval import DIGITS

    result = build(str(DIGITS), board="mps2-an505", out=tmp_path / "fw", quantize="int8", io="int8", compile=False)
    import importlib.util

    spec = importlib.util.spec_from_file_location("digits_model", DIGITS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x, y = mod.test_data()
    samples, labels = load_dataset((x[:40], y[:40]), [(1, 1, 8, 8)])

    class StandIn:
        calls = 0

        def hello(self):
            return SimpleNamespace(program_id=result.program_id, builtin_status=0, firmware_version="stand-in",
                                   inputs=[SimpleNamespace(scale=None)], outputs=[SimpleNamespace(scale=None)])

        def infer(self, inputs, during=None):
            if during:
                during()
            out = [np.array(o) for o in run_int8_reference(result.program, inputs)]
            if StandIn.calls == 3:
                out[0].reshape(-1)[0] ^= 1
            StandIn.calls += 1
            return out, 1000

    r = evaluate_link(StandIn(), result, samples, labels, out_dir=tmp_path / "eval")
    assert r.agreement == 39 / 40 and r.mismatches == [3] and not r.verified
    assert r.accuracy["int8_host"]["top1"] > 0.85 and r.n_classes == 10
    assert (tmp_path / "eval" / "eval.json").is_file()
