"""Post-training quantization: capture, annotate, calibrate, convert, and how well each calibration
method did on the user's data.

    gm = quantize_ptq(module, example_inputs, calibration, method="auto", hold_out=0,
                      bias_correction=False, compare=True)
    gm.meta["mcu_calibration"]   # method, samples, held out, per-method error against fp32, recommendation
    gm.meta["mcu_held_out"]      # the calibration samples kept out of calibration (run's test inputs)

One calibration pass feeds every method's observer at once (observers.CalibrationObserver); the
comparison converts a copy of the calibrated model per method and measures its fake-quantized
outputs (PT2E's converted graph, run in PyTorch) against the fp32 model on the held-out samples
(else on the calibration samples themselves). ``auto`` (the default) takes the method and bias
correction with the lowest of those errors (ties: the first in METHODS, without bias correction);
with nothing to compare on (a stateful model, ``compare=False``) it is histogram. Bias correction (Nagel et al., "Data-Free
Quantization", 2019, the empirical variant): each conv / linear bias absorbs the mean error its
int8 weights add to its outputs over the calibration data, per output channel.
"""
from __future__ import annotations

import copy

import torch
import torch.fx

from mcu_gen.quantize.observers import AUTO, CHOICES, DEFAULT_CHOICE, DEFAULT_METHOD, METHODS, check_method, set_method
from mcu_gen.capture.model_file import output_leaves
from mcu_gen.quantize.capture import capture_for_quantization, share_state_observers
from mcu_gen.quantize.quantizer import CONV_OPS, LINEAR_OPS, McuQuantizer

COMPARE_SAMPLES = 16  # samples the methods are compared on at most
BETTER = 0.9  # another method is recommended when its error is below this fraction of the chosen one's
HOLD_OUT_MIN = 8  # calibration sets this large give held-out samples to a model without test inputs
HOLD_OUT_MAX = 3


def held_out_count(n_samples: int) -> int:
    """How many calibration samples a model without test inputs keeps out of calibration (run's inputs)."""
    return 0 if n_samples < HOLD_OUT_MIN else min(HOLD_OUT_MAX, n_samples // HOLD_OUT_MIN)


def calibration_sequences(calibration: list) -> list:
    """Calibration data of a stateful model as sequences: a list of input tuples is one sequence,
    a list of lists of tuples several."""
    if calibration and isinstance(calibration[0], list):
        return calibration
    return [list(calibration)]


def output_error(model, module, samples: list) -> dict:
    """Mean over samples of each output's RMS error against fp32, relative to the fp32 output's RMS
    (summed over outputs), and the max abs error."""
    rel, worst = 0.0, 0.0
    with torch.no_grad():
        for x in samples:
            got, want = output_leaves(model(*x)), output_leaves(module(*x))
            for g, w in zip(got, want):
                d = (g.float() - w.float().reshape(g.shape)).double()
                rms_w = float(w.double().pow(2).mean().sqrt()) if w.numel() else 0.0
                rms = float(d.pow(2).mean().sqrt()) if d.numel() else 0.0
                rel += rms / max(rms_w, 1e-12) / len(samples)
                worst = max(worst, float(d.abs().max()) if d.numel() else 0.0)
    return {"relative_rms_error": rel, "max_abs_error": worst}


def _fp_weight(prepared: torch.fx.GraphModule, name: str):
    """The fp32 weight of conv / linear node `name` in the prepared (observed) graph."""
    node = next((n for n in prepared.graph.nodes if n.name == name), None)
    if node is None or len(node.args) < 2:
        return None
    w = node.args[1]
    while isinstance(w, torch.fx.Node) and w.op == "call_module":  # the weight's observer
        w = w.args[0]
    if not (isinstance(w, torch.fx.Node) and w.op == "get_attr"):
        return None
    obj = prepared
    for part in w.target.split("."):
        obj = getattr(obj, part)
    return obj.detach()


def correct_bias(converted: torch.fx.GraphModule, prepared: torch.fx.GraphModule, samples: list) -> int:
    """Bias correction in place: every conv / linear with a bias subtracts, per output channel, the mean
    over `samples` of what its int8 weight's error adds to its output. Returns how many it corrected."""
    targets = {}
    for n in converted.graph.nodes:
        if n.op == "call_function" and n.target in CONV_OPS | LINEAR_OPS and len(n.args) > 2:
            b = n.args[2]
            w = _fp_weight(prepared, n.name)
            if isinstance(b, torch.fx.Node) and b.op == "get_attr" and w is not None:
                targets[n.name] = (n, w, b.target)
    if not targets or not samples:
        return 0
    sums: dict = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            if n.name in targets:
                node, w_fp, _ = targets[n.name]
                x, w_q = self.env[node.args[0]], self.env[node.args[1]]
                d = node.target(x, (w_q - w_fp.reshape(w_q.shape)), None, *node.args[3:])
                dims = [k for k in range(d.dim()) if k != (d.dim() - 1 if node.target in LINEAR_OPS else 1)]
                sums[n.name] = sums.get(n.name, 0) + (d.mean(dim=dims) if dims else d)
            return super().run_node(n)

    with torch.no_grad():
        for x in samples:
            Recorder(converted).run(*x)
    for name, (_, _, target) in targets.items():
        obj = converted
        for part in target.split(".")[:-1]:
            obj = getattr(obj, part)
        bias = getattr(obj, target.split(".")[-1])
        bias.data.sub_((sums[name] / len(samples)).to(bias.dtype).reshape(bias.shape))
    return len(targets)


def _convert(prepared, method: str, bias: bool, samples: list) -> torch.fx.GraphModule:
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e

    model = copy.deepcopy(prepared)
    set_method(model, method)
    converted = convert_pt2e(model)
    if bias:
        correct_bias(converted, prepared, samples)
    return converted


def compare_methods(prepared, module, calibration: list, samples: list, chosen: str, bias: bool) -> tuple:
    """Every method (with and without bias correction) on `samples`: ({rows of {method, bias_correction,
    relative_rms_error, max_abs_error}, the recommendation when one is better than the chosen one},
    the chosen variant's converted model, the chosen (method, bias correction)). ``chosen`` AUTO: the
    variant with the lowest relative RMS error (``bias`` True: among the bias-corrected ones), first of
    METHODS and uncorrected on a tie."""
    rows, models = [], {}
    variants = [(m, bc) for m in METHODS for bc in (False, True)]
    for method, bc in variants:
        models[method, bc] = _convert(prepared, method, bc, calibration)
        err = output_error(models[method, bc], module, samples)
        rows.append({"method": method, "bias_correction": bc, **err})
    if chosen == AUTO:
        pool = [r for r in rows if r["bias_correction"] or not bias]
        mine = min(pool, key=lambda r: r["relative_rms_error"])  # min keeps the first of equals
    else:
        mine = next(r for r in rows if r["method"] == chosen and r["bias_correction"] == bias)
    best = min(rows, key=lambda r: r["relative_rms_error"])
    better = best is not mine and best["relative_rms_error"] < BETTER * mine["relative_rms_error"]
    pick = (mine["method"], mine["bias_correction"])
    return {"rows": rows, "recommended": ({"method": best["method"], "bias_correction": best["bias_correction"],
                                           "relative_rms_error": best["relative_rms_error"],
                                           "chosen_relative_rms_error": mine["relative_rms_error"]}
                                          if better else None)}, models[pick], pick


def quantize_ptq(module: torch.nn.Module, example_inputs: tuple, calibration: list, method: str = DEFAULT_CHOICE,
                 hold_out: int = 0, bias_correction: bool = False, compare: bool = True,
                 compare_on: list | None = None, int8_inputs: bool = False) -> torch.fx.GraphModule:
    """Post-training quantization: capture, annotate, calibrate on every input tuple, convert.
    A stateful model is calibrated step by step over sequences, the state carried from step to
    step (reset to its initial value at the start of each sequence). ``hold_out``: the last so many
    calibration samples of a stateless model are not calibrated on (gm.meta["mcu_held_out"]).
    ``compare``: measure every calibration method on `compare_on` (the model's test inputs), else the
    held-out samples, else the calibration samples. ``method`` AUTO: the variant that measured best
    there (histogram when nothing is compared); ``bias_correction`` True then restricts it to the
    bias-corrected variants. ``int8_inputs`` (--io int8): every float input observed, read unquantized or not."""
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    check_method(method, CHOICES)
    auto = method == AUTO
    if not calibration:
        raise ValueError("int8 quantization needs calibration data: define calibration_inputs() in the model "
                         "file or pass --calibration FILE (a torch.save'd list of input tuples)")
    gm = capture_for_quantization(module, example_inputs)
    states = gm.meta.get("mcu_states", [])
    n_user_out = gm.meta.get("mcu_user_outputs")
    prepared = prepare_pt2e(gm, McuQuantizer(method=DEFAULT_METHOD if auto else method,
                                                int8_inputs=int8_inputs))
    if states:
        share_state_observers(prepared, states)
    from mcu_gen.progress import Progress

    seqs = calibration_sequences(calibration)
    held: list = []
    if not states:  # a stateless model: every step is an input of its own
        flat = [x for seq in seqs for x in seq]
        if hold_out and len(flat) > hold_out:
            flat, held = flat[:-hold_out], flat[-hold_out:]
        seqs = [flat]
    bar = Progress("calibration", total=sum(len(s) for s in seqs))
    k = 0
    with torch.no_grad():
        for seq in seqs:
            state = [st["init"].clone() for st in states]
            for inputs in seq:
                outs = prepared(*inputs, *state)
                if states:
                    state = [o.detach() for o in list(outs)[n_user_out:]]
                k += 1
                bar.update(k)
    bar.done()
    calibrated = seqs[0] if not states else []
    info = {"method": DEFAULT_METHOD if auto else method, "bias_correction": bool(bias_correction and not states),
            "selected": "auto" if auto else "given", "samples": sum(len(s) for s in seqs), "held_out": len(held)}
    converted = None
    if compare and not states:
        samples = list(compare_on or held or calibrated)[:COMPARE_SAMPLES]
        info["compared_on"] = (f"{len(samples)} test input(s)" if compare_on else
                               f"{len(samples)} held-out calibration sample(s)" if held
                               else f"{len(samples)} calibration sample(s) (the data calibrated on)")
        with torch.no_grad():
            found, converted, (info["method"], info["bias_correction"]) = compare_methods(
                prepared, module.eval(), calibrated, samples, method, info["bias_correction"])
        info.update(found)
    if converted is None:
        converted = _convert(prepared, info["method"], info["bias_correction"], calibrated)
    if states:
        converted.meta["mcu_states"] = states
        converted.meta["mcu_user_outputs"] = n_user_out
    converted.meta["mcu_calibration"] = info
    converted.meta["mcu_held_out"] = held
    return converted
