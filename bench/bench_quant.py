"""int8 accuracy: mcu-gen's quantizer next to ExecuTorch's XNNPACK and Arm Ethos-U (TOSA) quantizers,
on the same calibration data, one row per model.

    python bench/bench_quant.py [--models mnist,digits,...] [--markdown] [--json FILE]

Models: the examples with calibration data (mnist, kws_dscnn, ic_resnet8, vww_mobilenet, ad_autoencoder),
tests/models_int8 and examples/digits (trained on scikit-learn's digits; its accuracy on the 360-image
test split is printed too). Every quantizer calibrates on the model file's calibration_inputs() (digits:
the 32 training images) and is measured on the same evaluation inputs: 16 drawn the way the model file
draws its test inputs (its `_inputs(seed, count)` with seed 50; the test inputs where it has none) and,
for digits, the first 64 test images. Error = mean over inputs of each output's RMS error against fp32
divided by the fp32 output's RMS ("rel RMS", summed over outputs), and the max abs error.

mcu-gen's figures are its integer reference (mcu_gen/reference/integer.py): what the device computes,
bit for bit. mcu-gen's default (`auto`) picks the method and bias correction whose PT2E graph has the
lowest error on the calibration samples (it never sees the evaluation inputs here; a build compares
on the model file's test inputs or held-out samples); the column names the variant it chose.
ExecuTorch's are its quantizers' PT2E converted graphs run in PyTorch (quantize/dequantize
around fp32 ops: what its int8 backends approximate). mcu-gen rows: its default (histogram activation
ranges, per-channel conv weights, per-tensor linear weights), every other --calibration-method, and
--bias-correction. "default vs best ET" is mcu-gen's default (auto) rel RMS over the better of XNNPACK
and Ethos-U: <= 1 means at least as accurate. "auto, PT2E graph" is the same quantized model's PT2E
graph run in PyTorch, like ExecuTorch's columns (float arithmetic between quantize/dequantize), and
"PT2E graph vs best ET" its ratio: the quantizers compared like with like, without the integer
arithmetic a device adds. Below the table: the operators each ExecuTorch quantizer leaves in fp32
(its graph passes their output on unquantized; an int8 device program cannot).

ExecuTorch's Arm backend imports tosa_serializer: it is taken from .venv/et-extras
($MCU_GEN_ET_EXTRAS; scripts/setup.sh installs it there), put last on sys.path.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ET_EXTRAS = Path(os.environ.get("MCU_GEN_ET_EXTRAS", ROOT / ".venv" / "et-extras"))
if not ET_EXTRAS.is_dir():
    ET_EXTRAS = Path("/work/main/.venv/et-extras")

EXAMPLES = ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder", "digits"]
MODELS_DIR = ROOT / "tests" / "models_int8"
EVAL_SAMPLES = 16
DIGITS_EVAL = 64
MCU_VARIANTS = [("auto", False), ("histogram", False), ("minmax", False), ("moving_average", False),
                ("percentile", False), ("histogram", True)]


def model_paths() -> dict:
    paths = {n: ROOT / "examples" / n / "model.py" for n in EXAMPLES}
    paths.update({p.stem: p for p in sorted(MODELS_DIR.glob("*.py"))})
    return paths


def _module_of(path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_quant_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def evaluation_inputs(path: Path, spec) -> list:
    mod = _module_of(path)
    if hasattr(mod, "test_data"):  # digits: test images
        import torch

        x, _ = mod.test_data()
        return [(torch.from_numpy(x[k:k + 1]),) for k in range(DIGITS_EVAL)]
    if hasattr(mod, "_inputs"):
        return list(mod._inputs(50, EVAL_SAMPLES))
    return list(spec.test_inputs or [])


def errors(outputs_fn, module, inputs: list) -> dict:
    import torch

    rel, worst = 0.0, 0.0
    with torch.no_grad():
        for x in inputs:
            got = outputs_fn(x)
            want = module(*x)
            want = [w for w in (want if isinstance(want, (tuple, list)) else [want])]
            for g, w in zip(got, want):
                g = torch.as_tensor(g).double().reshape(w.shape)
                w = w.double()
                d = g - w
                rel += float(d.pow(2).mean().sqrt()) / max(float(w.pow(2).mean().sqrt()), 1e-12) / len(inputs)
                worst = max(worst, float(d.abs().max()))
    return {"rel_rms": rel, "max_abs": worst}


def digits_accuracy(outputs_fn) -> float:
    import numpy as np
    import torch

    mod = _module_of(ROOT / "examples" / "digits" / "model.py")
    x, y = mod.test_data()
    hits = 0
    with torch.no_grad():
        for k in range(len(y)):
            hits += int(np.argmax(np.asarray(outputs_fn((torch.from_numpy(x[k:k + 1]),))[0]).reshape(-1)) == y[k])
    return hits / len(y)


def mcu_gen_outputs(spec, method: str, bias: bool):
    """A function (inputs) -> dequantized outputs of mcu-gen's int8 program (integer reference)."""
    from mcu_gen.quantize.calibration import quantize_ptq
    from mcu_gen.quantize.lowering import lower_quantized
    from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs
    from mcu_gen.reference.integer import run_int8_reference

    # what export_quantized does; auto compares on the calibration samples (compare_on None, nothing held
    # out), the fixed variants compare nothing
    gm = quantize_ptq(spec.module, spec.example_inputs, spec.calibration_inputs, method=method,
                      bias_correction=bias, compare=method == "auto")
    program = lower_quantized(gm, io="float32", user_file=spec.path)
    cal = gm.meta["mcu_calibration"]

    def fn(x):
        import numpy as np

        one = tuple(np.ascontiguousarray(t.numpy()) for t in x)
        return dequantize_outputs(program, run_int8_reference(program, list(quantize_inputs(program, one))))

    fn.chosen = cal["method"] + (" + bc" if cal["bias_correction"] else "")

    def pt2e(x):  # the same variant's PT2E converted graph in PyTorch: what ExecuTorch's columns measure
        out = gm(*x)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    fn.pt2e = pt2e
    return fn


def _et_quantizers() -> dict:
    if str(ET_EXTRAS) not in sys.path:
        sys.path.append(str(ET_EXTRAS))  # last: tosa-tools' generic package names must not shadow others
    from executorch.backends.arm.ethosu import EthosUCompileSpec
    from executorch.backends.arm.quantizer import EthosUQuantizer
    from executorch.backends.arm.quantizer import get_symmetric_quantization_config as arm_config
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (XNNPACKQuantizer,
                                                                         get_symmetric_quantization_config)

    def xnnpack():
        q = XNNPACKQuantizer()
        q.set_global(get_symmetric_quantization_config(is_per_channel=True))
        return q

    def ethos_u():
        q = EthosUQuantizer(EthosUCompileSpec("ethos-u55-128"))
        q.set_global(arm_config(is_per_channel=True))
        return q

    return {"xnnpack": xnnpack, "ethos_u": ethos_u}


def et_outputs(spec, make_quantizer):
    """A function (inputs) -> outputs of ExecuTorch's PT2E converted graph with that quantizer."""
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    gm = torch.export.export(spec.module.eval(), tuple(spec.example_inputs)).module(check_guards=False)  # F3
    prepared = prepare_pt2e(gm, make_quantizer())
    with torch.no_grad():
        for x in spec.calibration_inputs:
            prepared(*x)
    converted = convert_pt2e(prepared)

    def fn(x):
        out = converted(*x)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    fn.float_ops = float_ops(converted)
    return fn


def float_ops(converted) -> list:
    """The operators a PT2E converted graph computes in fp32 and passes on unquantized: no quantize node
    takes their output, directly or after a fused activation (conv -> relu) or a tuple's getitem. What
    that quantizer leaves in float, which an int8 device program cannot (mcu-gen runs such ops in int8,
    requantizing their output, or as an fp32 island between int8 tensors)."""
    import operator

    fused = {"relu", "relu_", "hardtanh", "hardtanh_", "clamp"}

    def name(n):
        return str(getattr(n.target, "__name__", n.target)).split(".")[0]

    def is_q(n):
        return n.op == "call_function" and "quantize" in str(n.target) and "dequantize" not in str(n.target)

    def requantized(n):
        if any(is_q(u) for u in n.users):
            return True
        return bool(n.users) and all(u.op == "call_function" and (u.target is operator.getitem or name(u) in fused)
                                     and requantized(u) for u in n.users)

    names = set()
    for n in converted.graph.nodes:
        if n.op != "call_function" or "quantize" in str(n.target) or n.target is operator.getitem:
            continue
        if not any("dequantize" in str(a.target) for a in n.all_input_nodes if a.op == "call_function"):
            continue  # reads no dequantized tensor: not part of the quantized graph
        if not requantized(n):
            names.add(name(n))
    return sorted(names)


def row(name: str, path: Path, et: dict) -> dict:
    from mcu_gen.capture.model_file import load_model_file

    spec = load_model_file(path)
    inputs = evaluation_inputs(path, spec)
    spec.test_inputs = inputs  # no held-out samples: every quantizer calibrates on the same data
    r = {"model": name, "calibration_samples": len(spec.calibration_inputs), "eval_inputs": len(inputs)}
    fns = {}
    for method, bias in MCU_VARIANTS:
        key = f"mcu_{method}" + ("_bc" if bias else "")
        fns[key] = mcu_gen_outputs(spec, method, bias)
        r[key] = errors(fns[key], spec.module, inputs)
        if method == "auto":
            r[key]["chosen"] = fns[key].chosen
            r["mcu_auto_pt2e"] = errors(fns[key].pt2e, spec.module, inputs)
    for key, make in et.items():
        try:
            fns[key] = et_outputs(spec, make)
            r[key] = errors(fns[key], spec.module, inputs)
            r[key]["float_ops"] = fns[key].float_ops
        except Exception as e:  # a model the peer's quantizer cannot take
            r[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"}
    if name == "digits":
        r["digits_accuracy"] = {"fp32": digits_accuracy(lambda x: [spec.module(*x)]),
                                **{k: digits_accuracy(f) for k, f in fns.items()}}
    best = [r[k]["rel_rms"] for k in et if "rel_rms" in r[k]]
    r["default_vs_best_et"] = r["mcu_auto"]["rel_rms"] / min(best) if best else None
    r["pt2e_vs_best_et"] = r["mcu_auto_pt2e"]["rel_rms"] / min(best) if best else None
    return r


COLUMNS = ["mcu_auto", "mcu_auto_pt2e", "mcu_histogram", "mcu_histogram_bc", "mcu_minmax", "mcu_moving_average", "mcu_percentile",
           "xnnpack", "ethos_u"]


def table(rows: list, markdown: bool) -> str:
    head = ["model", "auto (default)", "auto, PT2E graph"] + [c.replace("mcu_", "") for c in COLUMNS[2:]] + \
        ["default vs best ET", "PT2E graph vs best ET"]
    lines = []
    sep = " | " if markdown else "  "
    lines.append(("| " if markdown else "") + sep.join(head) + (" |" if markdown else ""))
    if markdown:
        lines.append("|" + "---|" * len(head))
    for r in rows:
        cells = [r["model"]]
        for c in COLUMNS:
            v = r.get(c, {})
            cell = f"{v['rel_rms']:.4f} ({v['max_abs']:.3g})" if "rel_rms" in v else "n/a"
            cells.append(cell + (f" {v['chosen']}" if "chosen" in v else ""))
        for ratio in (r["default_vs_best_et"], r["pt2e_vs_best_et"]):
            cells.append("-" if ratio is None else f"{ratio:.3f}")
        lines.append(("| " if markdown else "") + sep.join(cells) + (" |" if markdown else ""))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", default=None, help="write the rows here too")
    args = ap.parse_args()
    paths = model_paths()
    names = args.models.split(",") if args.models else list(paths)
    et = _et_quantizers()
    rows = []
    for name in names:
        print(f"... {name}", file=sys.stderr, flush=True)
        rows.append(row(name, paths[name], et))
        print(table(rows[-1:], args.markdown).splitlines()[-1], file=sys.stderr, flush=True)  # as it goes
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    print("rel RMS error against fp32 (max abs error), on the same calibration data and evaluation inputs")
    print(table(rows, args.markdown))
    for r in rows:
        if "digits_accuracy" in r:
            acc = r["digits_accuracy"]
            print("\ndigits, top-1 on the 360 test images: " + ", ".join(f"{k.replace('mcu_', '')} {v:.2%}"
                                                                        for k, v in acc.items()))
        for k in ("xnnpack", "ethos_u"):
            if "error" in r.get(k, {}):
                print(f"{r['model']}: {k} failed: {r[k]['error']}")
            elif r[k].get("float_ops"):
                print(f"{r['model']}: {k} leaves in fp32: {', '.join(r[k]['float_ops'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
