"""The memory plan as a picture and as text.

x = instruction step, y = arena offset; one labelled box per arena tensor
(views share their source's box; a tensor written in place over another starts
where the other ends). Also: the layer-wise lower bound, our arena size and
the instructions at which the arena's top byte is in use (the peak).

    rows(program)          one dict per arena tensor: value, name, offset, bytes, first/last step
    peak_ops(program)      the instructions that set the arena size
    text(program)          the plan as a table
    svg(program)           an SVG document (written directly, no dependencies)
    write_png(program, p)  a PNG (matplotlib)
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from mcu_gen.plan import planner
from mcu_gen.program.ir import Program

_COLOURS = ["#8ecae6", "#ffb703", "#90be6d", "#f4a261", "#b5a3e0", "#e76f51", "#76c7c0", "#f9c74f", "#adb5bd"]


def _bases(program: Program) -> dict:
    """Memory id -> where its arena starts in the picture: several RAM regions' arenas are drawn one
    above the other, memory 1 at the bottom."""
    out, base = {}, 0
    for k, n in enumerate(program.arena_sizes, start=1):
        out[k] = base
        base += n
    return out


def rows(program: Program) -> list:
    """One row per arena tensor; "offset" is inside its memory's arena ("memory", ExecuTorch's memory id),
    "y" where the picture draws it (the arenas of several RAM regions stacked)."""
    iv = planner.lifetimes(program)
    bases = _bases(program)
    out = []
    for root, it in sorted(iv.items(), key=lambda kv: (kv[1].start, kv[0])):
        t = program.values[root]
        kind = ("input" if root in program.inputs else "output" if root in program.outputs
                else "state" if root in program.states else "")
        out.append({"value": root, "name": t.name or f"v{root}", "dtype": t.dtype, "shape": list(t.shape),
                    "offset": t.offset, "memory": t.mem_id, "y": bases.get(t.mem_id, 0) + t.offset,
                    "bytes": it.size, "first_step": it.start, "last_step": it.end, "kind": kind})
    return out


def _used_by_step(program: Program) -> dict:
    used = {}
    for r in rows(program):
        if r["bytes"] == 0:
            continue
        for s in range(r["first_step"], r["last_step"] + 1):
            used[s] = max(used.get(s, 0), r["y"] + r["bytes"])
    return used


def peak_ops(program: Program) -> list:
    """[{step, op, source, top_bytes, live_bytes}] for the steps with the most bytes live."""
    steps = (program.meta.get("plan") or {}).get("peak_steps")
    used = _used_by_step(program)
    live = {}
    for r in rows(program):
        for s in range(r["first_step"], r["last_step"] + 1):
            live[s] = live.get(s, 0) + r["bytes"]
    if not steps:  # a program read from a .pte: no in-place records, count every tensor
        most = max(live.values(), default=0)
        steps = [s for s, n in sorted(live.items()) if n == most and most > 0]
    out = []
    for s in steps:
        ins = program.instructions[s]
        out.append({"step": s, "op": ins.op, "source": ins.source, "top_bytes": used.get(s, 0),
                    "live_bytes": live.get(s, 0)})
    return out


def summary(program: Program) -> dict:
    plan = program.meta.get("plan") or {}
    lb = program.lower_bound or planner.lower_bound(planner.lifetimes(program).values())
    arena = sum(program.arena_sizes)
    return {"arena_bytes": arena, "lower_bound_bytes": lb,
            "ratio_to_lower_bound": round(arena / lb, 4) if lb else None,
            **({"arenas_bytes": program.arena_sizes} if program.extra_arenas else {}),
            "strategy": plan.get("strategy"), "inplace": plan.get("inplace", []), "peak_ops": peak_ops(program)}


def text(program: Program) -> str:
    s = summary(program)
    ratio = f" ({s['ratio_to_lower_bound']:.2f}x)" if s["ratio_to_lower_bound"] else ""
    lines = [f"arena {s['arena_bytes']:,} B{ratio}, layer-wise lower bound {s['lower_bound_bytes']:,} B"
             + (f", strategy {s['strategy']}" if s["strategy"] else "")]
    for p in s["inplace"]:
        lines.append(f"  in place: step {p['step']} {p['op']} writes v{p['out']} over v{p['over']}")
    lines.append("peak at:")
    for p in s["peak_ops"]:
        src = f"  ({p['source']})" if p["source"] else ""
        lines.append(f"  step {p['step']:3d} {p['op']}: {p['live_bytes']:,} B live{src}")
    lines.append(f"{'value':>7s} {'offset':>9s} {'bytes':>9s} {'steps':>9s}  tensor")
    for r in rows(program):
        steps = f"{r['first_step']}..{r['last_step']}"
        kind = f" [{r['kind']}]" if r["kind"] else ""
        off = f"{r['offset']:,}" if r["memory"] == 1 else f"m{r['memory']}+{r['offset']:,}"  # memory id 2, 3, ...
        lines.append(f"{'v' + str(r['value']):>7s} {off:>9s} {r['bytes']:>9,} {steps:>9s}  "
                     f"{r['name']} {r['dtype']}{r['shape']}{kind}")
    return "\n".join(lines) + "\n"


def _title(program: Program) -> str:
    s = summary(program)
    name = program.meta.get("model", program.name)
    return (f"{name}: arena {s['arena_bytes']:,} B, layer-wise lower bound {s['lower_bound_bytes']:,} B; "
            f"peak at step(s) {', '.join(str(p['step']) for p in s['peak_ops']) or '-'}")


def svg(program: Program, width: int = 960, height: int = 540) -> str:
    n = max(len(program.instructions), 1)
    arena = max(sum(program.arena_sizes), 1)
    left, right, top, bottom = 70, 20, 40, 60
    pw, ph = width - left - right, height - top - bottom
    x = lambda step: left + pw * step / n  # noqa: E731
    y = lambda off: top + ph - ph * off / arena  # noqa: E731
    peaks = {p["step"] for p in peak_ops(program)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">{escape(_title(program))}</text>']
    for s in peaks:
        out.append(f'<rect x="{x(s):.1f}" y="{top}" width="{pw / n:.1f}" height="{ph}" fill="#ffe5e5"/>')
    for k, r in enumerate(rows(program)):
        if r["bytes"] == 0:
            continue
        x0, x1 = x(r["first_step"]), x(r["last_step"] + 1)
        y0, y1 = y(r["y"] + r["bytes"]), y(r["y"])
        label = f"v{r['value']} {r['bytes']:,} B"
        out.append(f'<g><title>{escape(r["name"])} {r["dtype"]}{r["shape"]} offset {r["offset"]:,} '
                   f'steps {r["first_step"]}..{r["last_step"]}</title>'
                   f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0, 1):.1f}" height="{max(y1 - y0, 1):.1f}" '
                   f'fill="{_COLOURS[k % len(_COLOURS)]}" fill-opacity="0.8" stroke="#333" stroke-width="0.6"/>')
        if y1 - y0 >= 11 and x1 - x0 >= 6 * len(label):
            out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{(y0 + y1) / 2 + 3:.1f}" text-anchor="middle">'
                       f'{escape(label)}</text>')
        out.append("</g>")
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>')
    for s in range(n + 1):
        if n <= 40 or s % 5 == 0:
            out.append(f'<text x="{x(s):.1f}" y="{top + ph + 14}" text-anchor="middle">{s}</text>')
    for k in range(5):
        off = arena * k // 4
        out.append(f'<text x="{left - 4}" y="{y(off) + 3:.1f}" text-anchor="end">{off:,}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 20}" text-anchor="middle">instruction step</text>')
    out.append(f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" '
               f'text-anchor="middle">arena offset (bytes)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_svg(program: Program, path) -> Path:
    path = Path(path)
    path.write_text(svg(program))
    return path


def write_png(program: Program, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    path = Path(path)
    n = max(len(program.instructions), 1)
    arena = max(sum(program.arena_sizes), 1)
    fig, ax = plt.subplots(figsize=(10, 5.6), dpi=100)
    for p in peak_ops(program):
        ax.axvspan(p["step"], p["step"] + 1, color="#ffe5e5", zorder=0)
    for k, r in enumerate(rows(program)):
        if r["bytes"] == 0:
            continue
        w = r["last_step"] + 1 - r["first_step"]
        ax.add_patch(Rectangle((r["first_step"], r["y"]), w, r["bytes"], facecolor=_COLOURS[k % len(_COLOURS)],
                               edgecolor="#333", linewidth=0.6, alpha=0.85))
        if r["bytes"] / arena > 0.04 and w / n > 0.06:
            ax.text(r["first_step"] + w / 2, r["y"] + r["bytes"] / 2, f"v{r['value']}\n{r['bytes']:,} B",
                    ha="center", va="center", fontsize=7)
    ax.set_xlim(0, n)
    ax.set_ylim(0, arena)
    ax.set_xlabel("instruction step")
    ax.set_ylabel("arena offset (bytes)")
    ax.set_title(_title(program), fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
