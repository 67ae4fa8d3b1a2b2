"""`mcu-gen profile`: per-operator instruction counts (cycles on hardware), measured on the device.

The device runs the program once with a tick read after every instruction (RUN_PROFILED,
docs/protocol.md) and returns the ticks; the host converts them (exact instructions under
QEMU -icount, cycles on a board) and compares their sum with a normal RUN of the same input.
Under QEMU, the cycle-counting plugin (mcu_gen/device/cycles.py) also sees every tick read, so each
operator gets the estimated cycles of its exact instruction stream (docs/cycles.md).

    r = profile("examples/kws_dscnn/model.py", board="mps2-an505")
    print(format_table(r)); write_svg(r, "profile.svg"); write_png(r, "profile.png")
"""
from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mcu_gen.device.link import LinkError
from mcu_gen.device.session import count_from_ticks, device_inputs, ensure_program, host_inputs, open_device


@dataclass
class OpProfile:
    index: int
    op: str
    backend: str
    shape: list
    dtype: str
    count: int
    share: float
    source: str = ""
    estimated_cycles: int | None = None  # QEMU: the cycle model's estimate of this operator (None: none)


@dataclass
class ProfileResult:
    board: str
    unit: str  # "instructions" (QEMU) or "cycles"
    model: str
    ops: list = field(default_factory=list)  # OpProfile per instruction, in program order
    total: int = 0  # sum of the per-operator counts
    whole: int = 0  # count of a normal RUN of the same input (no per-instruction tick reads)
    out: str = ""
    cycle_model: str | None = None  # the core whose table made the estimates (None: no estimates)
    cycles_unavailable: str | None = None  # why there are none, under QEMU

    @property
    def estimated_total(self) -> int | None:
        """Sum of the operators' estimated cycles (None unless every operator has one)."""
        cyc = [o.estimated_cycles for o in self.ops]
        return sum(cyc) if cyc and None not in cyc else None

    @property
    def discrepancy(self) -> float:
        """|sum of per-op counts - whole inference| / whole inference."""
        return abs(self.total - self.whole) / self.whole if self.whole else 0.0

    def by_operator(self) -> dict:
        """op name -> summed count, largest first."""
        agg = {}
        for r in self.ops:
            agg[r.op] = agg.get(r.op, 0) + r.count
        return dict(sorted(agg.items(), key=lambda kv: -kv[1]))

    def to_json(self) -> dict:
        d = asdict(self)
        d["discrepancy"] = self.discrepancy
        d["estimated_total"] = self.estimated_total
        d["by_operator"] = self.by_operator()
        return d


def _out_value(program, ins):
    """The instruction's result tensor: its last argument (ExecuTorch's out-variant convention)."""
    from mcu_gen.program.ir import TensorValue

    for v in reversed(ins.args):
        val = program.values[v]
        if isinstance(val, TensorValue):
            return val
        if getattr(val, "kind", "") == "tensor_list" and val.value:
            return program.values[val.value[0]]
    return None


def profile_link(result, link, inputs=None, counter=None) -> ProfileResult:
    """Profiles `result`'s program on a connected device (its program must be active). A program
    with state is RESET before each of the two runs, so both start from the initial state (the
    whole run and the profiled one do the same work, whatever ran before). `counter`, the
    CycleCounter attached to the QEMU session, adds each operator's estimated cycles."""
    board, program = result.board, result.program
    one = device_inputs(result, host_inputs(result, inputs, n=1)[0])
    if program.states:
        link.reset()
    _, whole_ticks = link.infer(one, rerun=not program.states)
    if program.states:
        link.reset()
    link.write_inputs(one)
    ticks, _ = link.run_profiled()
    if len(ticks) != len(program.instructions):
        raise RuntimeError(f"the device profiled {len(ticks)} instructions, the program has "
                           f"{len(program.instructions)}: is it running this build?")
    backends = {k.op: k.backend for k in getattr(result, "kernels", [])}
    rows = (getattr(result, "report", None) or {}).get("operators") or []
    per_instruction = [row.get("backend") for row in rows] if len(rows) == len(program.instructions) else []
    counts = [count_from_ticks(board, t) for t in ticks]
    total = sum(counts)
    ops = []
    for k, (ins, c) in enumerate(zip(program.instructions, counts)):
        out = _out_value(program, ins)
        backend = per_instruction[k] if per_instruction else backends.get(ins.op, "?")  # "generated": its own layer
        ops.append(OpProfile(k, ins.op, backend, list(out.shape) if out else [],
                             out.dtype if out else "", c, c / total if total else 0.0, ins.source or ""))
    name = program.meta.get("model") or (result.spec.name if result.spec is not None else "program")
    r = ProfileResult(board.name, board.ticks_unit, name, ops, total, count_from_ticks(board, whole_ticks),
                      str(result.out))
    if counter is not None:
        _add_estimates(r, counter, board.core)
    return r


def _add_estimates(r: ProfileResult, counter, core: str) -> None:
    """Each operator's estimated cycles, from the plugin's segment with its exact instruction count.
    An operator of fewer than cycles.MIN_SEGMENT instructions has no segment: it is charged one cycle
    per instruction on the M33 table's floor (every class costs at least 1) and the result says so."""
    from mcu_gen.device.cycles import MIN_SEGMENT, CyclesUnavailable, estimate

    if not counter.available:
        r.cycles_unavailable = counter.reason
        return
    counts = [o.count for o in r.ops]
    found = counter.per_inference([r.whole] + counts)[1:]
    try:
        for o, f in zip(r.ops, found):
            if f is not None:
                o.estimated_cycles = estimate(f, core).cycles
            elif o.count < MIN_SEGMENT:
                o.estimated_cycles = o.count
    except CyclesUnavailable as e:
        r.cycles_unavailable = str(e)
        return
    missing = [o.index for o in r.ops if o.estimated_cycles is None]
    if missing:
        r.cycles_unavailable = (counter.reason or f"no plugin segment for operators {missing}")
    r.cycle_model = core


def profile(model=None, *, board: str = "mps2-an505", port: str | None = None, pte_path=None, out=None,
            inputs=None, quantize=None, io: str = "float32", timeout: float = 60.0, result=None,
            cycles: bool = True, **build_options) -> ProfileResult:
    """Builds (unless `result`, a BuildResult, is given), runs on the board and profiles (under QEMU
    with each operator's estimated cycles unless `cycles` is False)."""
    if result is None:
        from mcu_gen.firmware.builder import build

        result = build(model, board=board, pte_path=pte_path, out=out, quantize=quantize, io=io,
                       **{"debug": True, **build_options})
    counter = None
    if port is None and result.board.is_qemu and cycles:
        from mcu_gen.device.cycles import CycleCounter

        counter = CycleCounter.for_board(result.board, result.elf)
    try:
        args = counter.qemu_args() if counter is not None else ()
        try:
            with open_device(result.board, result.elf, port=port, run_timeout=timeout, qemu_args=args) as link:
                ensure_program(link, result)
                return profile_link(result, link, inputs, counter if args else None)
        except LinkError:
            if not args:
                raise
        # QEMU did not start (or answer) with the plugin: profile without estimates, and say why
        with open_device(result.board, result.elf, port=port, run_timeout=timeout) as link:
            ensure_program(link, result)
            r = profile_link(result, link, inputs)
        r.cycles_unavailable = "QEMU did not run with the cycle-counting plugin"
        return r
    finally:
        if counter is not None:
            counter.close()


# --- output ----------------------------------------------------------------------------------------

def format_table(r: ProfileResult) -> str:
    unit = "instr" if r.unit == "instructions" else r.unit
    est = r.cycle_model is not None
    rows = [("#", "op", "backend", "shape", unit, "share") + (("est. cycles", "share") if est else ())]
    total_cyc = sum(o.estimated_cycles or 0 for o in r.ops)
    for o in r.ops:
        row = (str(o.index), o.op, o.backend, "x".join(map(str, o.shape)) + f" {o.dtype}", f"{o.count:,}",
               f"{o.share:6.1%}")
        if est:
            c = o.estimated_cycles
            row += (f"{c:,}", f"{c / total_cyc:6.1%}") if c is not None and total_cyc else ("-", "")
        rows.append(row)
    rows.append(("", "total (sum of operators)", "", "", f"{r.total:,}", "100.0%")
                + ((f"{total_cyc:,}", "100.0%") if est else ()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {0, 4, 5, 6, 7}
    lines = []
    for n, row in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if n == 0 or n == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(f"whole inference (normal RUN): {r.whole:,} {r.unit}; the operators add up to "
                 f"{r.total / r.whole:.2%} of it" if r.whole else "")
    if est:
        lines.append(f"est. cycles: the {r.cycle_model} cycle model (docs/cycles.md) on each operator's own "
                     f"instruction stream, the tick read between operators included")
    if r.cycles_unavailable:
        lines.append(f"no (complete) cycle estimate: {r.cycles_unavailable}")
    return "\n".join(lines)


def _labels(r: ProfileResult) -> list:
    return [f"{o.index} {o.op.split('::')[-1].rsplit('.', 1)[0]}" for o in r.ops]


def write_svg(r: ProfileResult, path) -> Path:
    """A horizontal bar chart, one bar per instruction, written as plain SVG (no dependency)."""
    labels, bar_h, gap, left, width = _labels(r), 18, 6, 230, 420
    top = 40
    height = top + len(r.ops) * (bar_h + gap) + 20
    biggest = max((o.count for o in r.ops), default=1) or 1
    unit = "instructions" if r.unit == "instructions" else r.unit
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 170}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="10" y="22" font-size="15">{html.escape(r.model)} on {html.escape(r.board)}: '
             f'{r.total:,} {unit} per inference</text>']
    for k, (o, label) in enumerate(zip(r.ops, labels)):
        y = top + k * (bar_h + gap)
        w = max(1, round(width * o.count / biggest))
        parts.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">{html.escape(label)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{w}" height="{bar_h}" fill="#4878a8">'
                     f'<title>{html.escape(o.op)} {html.escape(o.source)}</title></rect>')
        parts.append(f'<text x="{left + w + 6}" y="{y + 13}">{o.count:,} ({o.share:.1%})</text>')
    parts.append("</svg>\n")
    path = Path(path)
    path.write_text("\n".join(parts))
    return path


def write_png(r: ProfileResult, path) -> Path:
    """The same chart as a PNG (matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError("the PNG chart needs matplotlib (pip install matplotlib); the SVG needs nothing") from e
    labels = _labels(r)
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(labels) + 1.2))
    ax.barh(range(len(labels)), [o.count for o in r.ops], color="#4878a8")
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(r.unit)
    ax.set_title(f"{r.model} on {r.board}: {r.total:,} {r.unit} per inference")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
