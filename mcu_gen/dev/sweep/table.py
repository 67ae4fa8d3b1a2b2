"""The sweep's outputs: the table (CSV, JSON, text), the Pareto front, its picture and the constraint filter."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

COLUMNS = ("model", "board", "quantize", "io", "backend", "kernels", "calibration_method", "ram_regions", "npu",
           "status", "reason", "ms", "cycles", "cycles_low", "cycles_high", "clock_mhz", "instructions",
           "ram_bytes", "flash_bytes", "arena_bytes", "stack_bytes", "pte_bytes", "error_vs_fp32", "verified",
           "bit_exact", "pareto", "cached", "seconds", "host", "command", "artifacts", "key", "notes")
OBJECTIVES = ("ms", "ram_bytes", "flash_bytes", "error_vs_fp32")  # all minimized
PREFER = {"ms": "fastest", "ram_bytes": "least RAM", "flash_bytes": "least flash", "error_vs_fp32": "most accurate"}


def usable(row) -> bool:
    return row.get("status") == "ok" and all(row.get(k) is not None for k in OBJECTIVES)


def dominates(a, b) -> bool:
    return all(a[k] <= b[k] for k in OBJECTIVES) and any(a[k] < b[k] for k in OBJECTIVES)


def mark_pareto(rows) -> None:
    """row["pareto"]: not dominated by another verified build of the same model (ms, RAM, flash, error)."""
    for r in rows:
        r["pareto"] = usable(r) and not any(usable(o) and o["model"] == r["model"] and dominates(o, r)
                                            for o in rows if o is not r)


def write_csv(rows, path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("; ".join(r[k]) if isinstance(r.get(k), list) else r.get(k)) for k in COLUMNS})


def write_json(rows, path: Path, meta: dict) -> None:
    path.write_text(json.dumps({**meta, "rows": rows}, indent=2, default=str))


def _kib(n):
    return "" if n is None else f"{n / 1024:,.1f}"


def _opts(r) -> str:
    from mcu_gen.dev.sweep.grid import OPTIONS

    parts = [f"{OPTIONS[k][0][2:]}={r[k]}" for k in OPTIONS if r.get(k) is not None and k != "quantize"]
    return " ".join([r.get("quantize") or "fp32"] + parts)


def text_table(rows) -> str:
    head = ("model", "board", "options", "status", "ms", "cycles", "RAM KiB", "flash KiB", "err vs fp32", "")
    lines = [head]
    for r in rows:
        err = r.get("error_vs_fp32")
        lines.append((r["model"], r["board"], _opts(r), r["status"], "" if r.get("ms") is None else f"{r['ms']:.3g}",
                      "" if r.get("cycles") is None else f"{r['cycles']:,}", _kib(r.get("ram_bytes")),
                      _kib(r.get("flash_bytes")), "" if err is None else f"{err:.2g}",
                      ("pareto " if r.get("pareto") else "") + ("cached" if r.get("cached") else "")))
    widths = [max(len(str(x)) for x in col) for col in zip(*lines)]
    out = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in lines]
    for r in rows:
        if r["status"] not in ("ok",):
            out.append(f"  {r['model']} {r['board']} {_opts(r)}: {r['status']}: {r.get('reason')}")
    return "\n".join(out)


def choose(rows, max_ram=None, max_flash=None, max_ms=None, max_error=None, prefer: str = "ms") -> list:
    """Per model, the best verified build within the limits (by `prefer`, then the other objectives in order),
    with why: [{"model", "row" (None: nothing fits), "why"}]."""
    limits = [(k, v) for k, v in (("ram_bytes", max_ram), ("flash_bytes", max_flash), ("ms", max_ms),
                                  ("error_vs_fp32", max_error)) if v is not None]
    names = {"ram_bytes": "RAM", "flash_bytes": "flash", "ms": "ms", "error_vs_fp32": "error vs fp32"}

    def show(k, v):
        return f"{v / 1024:,.1f} KiB" if k.endswith("bytes") else (f"{v:.3g} ms" if k == "ms" else f"{v:.2g}")

    order = [prefer] + [k for k in OBJECTIVES if k != prefer]
    picks = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        ok = [r for r in mine if r["status"] == "ok"]
        fits, out = [], []
        for r in ok:
            over = [f"{names[k]} {show(k, r[k])} > {show(k, v)}" for k, v in limits if r.get(k) is not None and r[k] > v]
            (out if over else fits).append((r, over))
        failed = sum(r["status"] in ("failed", "mismatch") for r in mine)
        built = sum(r["status"] == "built" for r in mine)
        limit_text = " and ".join(f"{names[k]} <= {show(k, v)}" for k, v in limits) or "no limits"
        if not fits:
            why = (f"no verified build of {model}" + (f" fits {limit_text}" if limits else "") + ": "
                   + "; ".join(f"{r['board']} {_opts(r)}: {', '.join(o)}" for r, o in out[:6])
                   + (f" ({failed} build(s) failed)" if failed else "")
                   + (f" ({built} built only, not verified)" if built else ""))
            picks.append({"model": model, "row": None, "why": why})
            continue
        fits.sort(key=lambda ro: tuple(math.inf if ro[0].get(k) is None else ro[0][k] for k in order))
        best = fits[0][0]
        runner = fits[1][0] if len(fits) > 1 else None
        why = (f"{PREFER.get(prefer, prefer)} of {len(fits)} verified build(s) within {limit_text} "
               f"({show(prefer, best[prefer]) if best.get(prefer) is not None else 'n/a'}; RAM {show('ram_bytes', best['ram_bytes'])}, "
               f"flash {show('flash_bytes', best['flash_bytes'])}"
               + (f", error vs fp32 {best['error_vs_fp32']:.2g}" if best.get("error_vs_fp32") is not None else "") + ")")
        if runner is not None and runner.get(prefer) is not None and best.get(prefer) is not None:
            why += f"; next: {runner['board']} {_opts(runner)} at {show(prefer, runner[prefer])}"
        if out:
            why += f"; {len(out)} verified build(s) exceed the limits, e.g. {out[0][0]['board']} {_opts(out[0][0])}: {', '.join(out[0][1])}"
        if failed:
            why += f"; {failed} build(s) failed"
        if built:
            why += f"; {built} built only, not verified"
        picks.append({"model": model, "row": best, "why": why})
    return picks


def write_picture(rows, paths, title: str) -> list:
    """The Pareto picture: estimated ms x RAM and ms x flash, colour = error vs fp32, Pareto points ringed and
    numbered, with the numbered points' `mcu-gen build` commands under the plots. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    pts = [r for r in rows if usable(r)]
    front = [r for r in pts if r.get("pareto")]
    cmds = [f"[{k + 1}] {r['model']} {r['board']} {_opts(r)}: {r['ms']:.3g} ms, RAM {_kib(r['ram_bytes'])} KiB, "
            f"flash {_kib(r['flash_bytes'])} KiB, err {r['error_vs_fp32']:.2g}\n     {r['command']}"
            for k, r in enumerate(front)]
    n_lines = 2 * len(cmds)
    height = 0.55 + 3.4 + 0.75 + 0.16 * n_lines + 0.2  # inches: title, plots, x labels, the command list
    fig = plt.figure(figsize=(12, height))
    bottom = (height - 0.55 - 3.4) / height
    ax1 = fig.add_axes([0.07, bottom, 0.36, 3.4 / height])
    ax2 = fig.add_axes([0.52, bottom, 0.36, 3.4 / height])
    errs = [max(r["error_vs_fp32"], 1e-9) for r in pts] or [1e-9]
    norm = LogNorm(vmin=min(errs), vmax=max(max(errs), min(errs) * 10))
    markers = "osD^vP*X"
    models = list(dict.fromkeys(r["model"] for r in rows))
    sc = None
    for ax, key, label in ((ax1, "ram_bytes", "RAM (KiB)"), (ax2, "flash_bytes", "flash (KiB)")):
        for mi, model in enumerate(models):
            mine = [r for r in pts if r["model"] == model]
            if not mine:
                continue
            sc = ax.scatter([r["ms"] for r in mine], [r[key] / 1024 for r in mine],
                            c=[max(r["error_vs_fp32"], 1e-9) for r in mine], cmap="viridis", norm=norm,
                            marker=markers[mi % len(markers)], s=60, label=model, edgecolors="none")
        for k, r in enumerate(front):
            ax.scatter([r["ms"]], [r[key] / 1024], s=160, facecolors="none", edgecolors="red", linewidths=1.2)
            ax.annotate(str(k + 1), (r["ms"], r[key] / 1024), xytext=(5, 4), textcoords="offset points", fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("estimated ms per inference (board clock)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    if pts:
        ax1.legend(fontsize=8, loc="best")
    if sc is not None:
        cax = fig.add_axes([0.91, bottom, 0.015, 3.4 / height])
        fig.colorbar(sc, cax=cax, label="max abs error vs fp32 PyTorch")
    fig.suptitle(title + f"  ({len(front)} Pareto point(s) ringed of {len(pts)} verified; "
                 f"{len(rows) - len(pts)} failed or without estimate)", fontsize=10)
    fig.text(0.01, (0.16 * n_lines + 0.2) / height, "\n".join(cmds), fontsize=7, family="monospace", va="top")
    written = []
    for p in paths:
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # SVG text stays text: the commands can be copied
            fig.savefig(p, dpi=110)
        written.append(str(p))
    plt.close(fig)
    return written
