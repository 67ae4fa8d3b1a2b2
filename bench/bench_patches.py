"""What patch-based execution (MCUNetV2) of the first, high-resolution layers would give, measured on the
program mcu-gen builds today (int8, int8 I/O): peak RAM with and without patches, and the extra MACs.

    python bench/bench_patches.py [--example vww_mobilenet] [--grids 2,3,4]

No patch kernels exist (docs/memory_planning.md "Patch-based execution"); this computes, from the real
layers of the program (kernel, stride, padding, channels of each convolution in the sequential prefix), what
a patch schedule would need:
- the first k layers run once per patch of an n x n grid of layer k's output; each patch's input window is
  layer k's patch traced back through every layer (stride, padding, kernel: the overlap, recomputed);
- during the patched stage the whole graph input stays live (later patches read it), and so does the whole
  stage output (written patch by patch); on top comes the patch's working set: the largest in + out pair of
  patch tensors of one layer (without in-place inside a patch) or the larger of the two plus the layer's
  in-place scratch (with the in-place kernels mcu-gen has);
- after the stage the program runs as planned today: its peak is the most bytes live at any later step of
  today's plan (in-place buffers counted at their size at that step).
Peak with patches = max(stage, rest). Today's figures: the planned arena (in place, no patches) and the
layer-wise lower bound.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcu_gen.firmware.builder import load_program  # noqa: E402
from mcu_gen.plan import placement, planner  # noqa: E402
from mcu_gen.program.ir import ScalarValue, TensorValue  # noqa: E402


def conv_layers(program) -> list:
    """The sequential prefix of convolutions: [{k, stride, pad, cin, cout, depthwise, h_in, h_out, step}]."""
    out, prev = [], None
    for step, ins in enumerate(program.instructions):
        if "conv2d" not in ins.op:
            break
        ts = [program.values[a] for a in ins.args]
        x, w = ts[0], ts[1]
        y = ts[-1]
        if prev is not None and ins.args[0] != prev:
            break
        lists = [v.value for v in ts if isinstance(v, ScalarValue) and v.kind == "int_list"]
        stride, pad = lists[0][0], lists[1][0]
        dw = "depthwise" in ins.op
        k = w.shape[1]  # int8 weights are [Cout, kh, kw, Cin] (depthwise [1, kh, kw, C])
        out.append({"step": step, "k": k, "stride": stride, "pad": pad, "cin": x.shape[1], "cout": y.shape[1],
                    "depthwise": dw, "h_in": x.shape[2], "w_in": x.shape[3], "h_out": y.shape[2], "w_out": y.shape[3],
                    "taps": k * k * (1 if dw else x.shape[1]), "scratch": _scratch(program, ins)})
        prev = ins.args[-1]
    return out


def _scratch(program, ins) -> int:
    ts = [program.values[a] for a in ins.args if isinstance(program.values[a], TensorValue)]
    arena = [t for t in ts if not t.is_constant]
    return sum(t.nbytes for t in arena[1:-1] if len(t.shape) == 1)


def _window(lo, hi, layer, size_in):
    """Input rows [lo', hi') a layer needs for output rows [lo, hi)."""
    a = lo * layer["stride"] - layer["pad"]
    b = (hi - 1) * layer["stride"] - layer["pad"] + layer["k"]
    return max(0, a), min(size_in, b)


def patch_schedule(layers, k: int, n: int) -> dict:
    """Peak working set and MACs of running layers[:k] patch by patch over an n x n grid."""
    last = layers[k - 1]
    H, W = last["h_out"], last["w_out"]
    macs, work, work_ip = 0, 0, 0
    for i in range(n):
        for j in range(n):
            rows = (H * i // n, H * (i + 1) // n)
            cols = (W * j // n, W * (j + 1) // n)
            sizes = []  # (rows, cols) of each layer's output patch, last layer first
            r, c = rows, cols
            for layer in reversed(layers[:k]):
                sizes.append((r, c))
                r = _window(*r, layer, layer["h_in"])
                c = _window(*c, layer, layer["w_in"])
            sizes.reverse()
            for idx, layer in enumerate(layers[:k]):
                (r0, r1), (c0, c1) = sizes[idx]
                out_b = (r1 - r0) * (c1 - c0) * layer["cout"]
                macs += out_b * layer["taps"]
                if idx == 0:
                    in_b = 0  # the graph input: counted whole, beside the working set
                else:
                    (q0, q1), (d0, d1) = sizes[idx - 1]
                    in_b = (q1 - q0) * (d1 - d0) * layer["cin"]
                if idx == k - 1:
                    out_b = 0  # written straight into the (whole) stage output
                work = max(work, in_b + out_b)
                # With mcu-gen's in-place kernels inside a patch: the out over its input, plus the kernel's
                # scratch (depthwise: one channel of the input patch; 1x1: one input pixel; k x k: 2 rows).
                (q0, q1), (d0, d1) = sizes[idx - 1] if idx else ((0, 0), (0, 0))
                pix = (q1 - q0) * (d1 - d0)
                scratch = (pix if layer["depthwise"] else layer["cin"] if layer["k"] == 1
                           else 2 * (d1 - d0) * layer["cin"]) if idx else 0
                work_ip = max(work_ip, max(in_b, out_b) + scratch)
    return {"macs": macs, "work": work, "work_inplace": work_ip}


def measure(example: str, grids) -> None:
    program, _, _ = load_program(ROOT / "examples" / example / "model.py", quantize="int8", io="int8")
    layers = conv_layers(program)
    assert all(len(program.tensor(a).shape) == 4 for a in [program.instructions[0].args[0]])
    full_macs = sum(l["h_out"] * l["w_out"] * l["cout"] * l["taps"] for l in layers)
    iv = planner.lifetimes(program)
    pairs = [type("P", (), {"out": o, "src": s}) for _, o, s in program.meta.get("inplace", [])]
    bufs = placement.make_buffers(iv, pairs)
    n_steps = len(program.instructions)
    live = [sum(b.at(s) for b in bufs) for s in range(n_steps)]
    inp = sum(program.tensor(i).nbytes for i in program.inputs)
    print(f"{example} int8: planned arena today {program.arena_size:,} B (in place, no patches), layer-wise "
          f"lower bound {program.lower_bound:,} B, graph input {inp:,} B; convolution prefix of {len(layers)} "
          f"layers, {full_macs:,} MACs")
    print()
    print("| patched layers (stage output) | grid | stage peak B | rest peak B | peak with patches B | "
          "vs today's arena | vs layer-wise bound | peak, in place inside each patch B | extra MACs (of the prefix) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in range(2, len(layers) + 1):
        last = layers[k - 1]
        stage_out = last["h_out"] * last["w_out"] * last["cout"]
        if last["h_out"] < 12:
            break
        rest = max(live[layers[k - 1]["step"] + 1:], default=0)
        for n in grids:
            s = patch_schedule(layers, k, n)
            stage = inp + stage_out + s["work"]
            peak = max(stage, rest)
            peak_ip = max(inp + stage_out + s["work_inplace"], rest)
            print(f"| 0..{k - 1} ({last['h_out']}x{last['w_out']}x{last['cout']}) | {n}x{n} | {stage:,} | {rest:,} | "
                  f"{peak:,} | {peak / program.arena_size:.2f}x | {peak / program.lower_bound:.2f}x | {peak_ip:,} | "
                  f"{s['macs'] - sum(l['h_out'] * l['w_out'] * l['cout'] * l['taps'] for l in layers[:k]):,} "
                  f"(+{(s['macs'] / sum(l['h_out'] * l['w_out'] * l['cout'] * l['taps'] for l in layers[:k]) - 1):.1%}) |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", default="vww_mobilenet")
    ap.add_argument("--grids", default="2,3,4")
    args = ap.parse_args()
    measure(args.example, [int(g) for g in args.grids.split(",")])


if __name__ == "__main__":
    main()
