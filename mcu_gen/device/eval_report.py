"""What `mcu-gen eval` writes and prints: eval.json, eval.md, the confusion matrix as PNG and SVG
(matplotlib; the SVG keeps its text as text, so the class labels and counts can be read back), and the
lines of the command's summary."""
from __future__ import annotations

import json
from pathlib import Path

ROWS = (("fp32_host", "fp32, host (PyTorch)"), ("int8_host", "int8, host (integer reference)"),
        ("device", "device"))


def confusion_figure(matrix: list, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    m = np.asarray(matrix)
    k = len(m)
    size = min(12.0, 2.0 + 0.55 * k)
    fig, ax = plt.subplots(figsize=(size, size * 0.9), dpi=100)
    ax.imshow(m, cmap="Blues")
    ax.set_xticks(range(k), [str(c) for c in range(k)])
    ax.set_yticks(range(k), [str(c) for c in range(k)])
    ax.set_xlabel("predicted class (device)")
    ax.set_ylabel("label")
    ax.set_title(title, fontsize=10)
    top = m.max() if m.size else 0
    if k <= 30:
        for i in range(k):
            for j in range(k):
                if m[i, j]:
                    ax.text(j, i, str(m[i, j]), ha="center", va="center", fontsize=8,
                            color="white" if m[i, j] > top / 2 else "black", gid=f"cell-{i}-{j}")
    fig.tight_layout()
    return fig


def write_confusion(matrix: list, title: str, paths: list) -> list:
    """The confusion matrix to each path (.png or .svg); reproducible bytes (no dates, fixed ids)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mcu-gen"}):
        fig = confusion_figure(matrix, title)
        try:
            for p in paths:
                p = Path(p)
                if p.suffix not in (".png", ".svg"):
                    raise ValueError(f"{p}: the confusion matrix is written as .png or .svg")
                p.parent.mkdir(parents=True, exist_ok=True)
                meta = {"Date": None} if p.suffix == ".svg" else {"Software": None}
                fig.savefig(p, format=p.suffix[1:], metadata=meta)
                written.append(str(p))
        finally:
            plt.close(fig)
    return written


def summary_lines(r) -> list:
    """The text `mcu-gen eval` prints."""
    k = r.top_k
    head = f"{'':34s}{'top-1':>9s}" + (f"{'top-' + str(k):>9s}" if k else "")
    lines = [head]
    for key, name in ROWS:
        a = r.accuracy.get(key)
        if a:
            lines.append(f"  {name:32s}{a['top1']:>9.2%}" + (f"{a[f'top{k}']:>9.2%}" if k else ""))
    exact = "identical outputs, bit for bit" if r.quantize else "within tolerance of PyTorch"
    n_same = round(r.agreement * r.n_samples)
    lines.append(f"  device vs {r.reference}: {n_same}/{r.n_samples} samples {exact}, same top-1 class "
                 f"{r.top1_agreement:.2%}" + (f"; first mismatches: {r.mismatches[:5]}" if r.mismatches else ""))
    fp, dev = r.accuracy.get("fp32_host"), r.accuracy["device"]
    per = []
    for c in range(r.n_classes):
        d = dev["per_class"][c]
        if d is None:
            continue
        f = fp["per_class"][c] if fp else None
        per.append(f"{c}: {d:.0%}" + (f" ({f:.0%})" if f is not None and f != d else ""))
    lines.append("  per class (device" + (", fp32 in brackets where it differs" if fp else "") + "): " + ", ".join(per))
    return lines


def markdown(r) -> str:
    k = r.top_k
    lines = [f"# eval: {r.model} on {r.board}", "",
             f"{r.n_samples} labelled samples, {r.n_classes} classes; build {r.quantize or 'fp32'}, I/O {r.io}; "
             f"{r.samples_per_second:.1f} samples/s over the link ({r.seconds:.1f} s).", "",
             "| | top-1" + (f" | top-{k}" if k else "") + " |", "|---|---|" + ("---|" if k else "")]
    for key, name in ROWS:
        a = r.accuracy.get(key)
        if a:
            lines.append(f"| {name} | {a['top1']:.2%}" + (f" | {a[f'top{k}']:.2%}" if k else "") + " |")
    lines += ["", f"Device against the {r.reference}: {r.agreement:.2%} of the samples agree "
              f"(same top-1 class: {r.top1_agreement:.2%}).", "", "## Per class", "",
              "| class | " + " | ".join(name for key, name in ROWS if key in r.accuracy) + " |",
              "|---|" + "---|" * len(r.accuracy)]
    for c in range(r.n_classes):
        cells = []
        for key, _ in ROWS:
            if key in r.accuracy:
                v = r.accuracy[key]["per_class"][c]
                cells.append("-" if v is None else f"{v:.2%}")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += ["", "## Confusion matrix (device; rows: label, columns: predicted class)", ""]
    lines += [f"![confusion matrix]({Path(p).name})" for p in r.confusion_files if p.endswith(".svg")]
    return "\n".join(lines) + "\n"


def write_eval_files(r, out_dir) -> list:
    """eval.json, eval.md and confusion.png / confusion.svg in `out_dir`; returns the pictures' paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dev = r.accuracy["device"]["top1"]
    title = f"{r.model} on {r.board} ({r.quantize or 'fp32'}): device top-1 {dev:.2%}, {r.n_samples} samples"
    files = write_confusion(r.confusion, title, [out / "confusion.png", out / "confusion.svg"])
    r.confusion_files = files
    (out / "eval.json").write_text(json.dumps(r.to_json(), indent=2) + "\n")
    (out / "eval.md").write_text(markdown(r))
    return files
