"""The points of a sweep: models x boards x every combination of the build options asked for.

A point's options are canonical: an option that does not apply to it is left out (without
--quantize int8 the int8 kernel choices, I/O dtype and calibration do nothing; --npu only on a
board with an NPU), so grid points that are the same build are one task. Every point has the
exact `mcu-gen build` command line that makes its firmware.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

# option name -> (CLI flag, the build's default). The order is the order of the command line and the table.
OPTIONS = {
    "quantize": ("--quantize", None),
    "io": ("--io", "float32"),
    "backend": ("--backend", "auto"),
    "kernels": ("--kernels", "auto"),
    "calibration_method": ("--calibration-method", None),
    "ram_regions": ("--ram-regions", None),
    "npu": ("--npu", None),
}
INT8_ONLY = ("io", "backend", "kernels", "calibration_method")
NONE_WORDS = ("none", "fp32", "float32", "default", "")


def model_name(path: Path) -> str:
    """The name mcu-gen gives a model file (mcu_gen.capture.model_file.model_name; not imported: torch)."""
    return path.parent.name if path.stem == "model" and path.parent.name else path.stem


def split_values(values) -> list:
    """`--quantize none,int8 --quantize int8` -> [None, "int8"] (in order, once each); 'none'/'default' -> None.
    --ram-regions values hold commas themselves (dtcm=16K,sram=1M): give them as repeated flags or split by ';'."""
    out = []
    for v in values or []:
        for part in v:
            part = part.strip()
            value = None if part.lower() in NONE_WORDS else part
            if value not in out:
                out.append(value)
    return out


@dataclass
class Point:
    model: Path
    board: str
    options: dict = field(default_factory=dict)  # canonical: only options that apply, None values dropped
    notes: list = field(default_factory=list)  # options of the grid that were dropped, and why

    @property
    def name(self) -> str:
        return model_name(self.model)

    def label(self) -> str:
        opts = " ".join(f"{OPTIONS[k][0][2:]}={v}" for k, v in self.options.items())
        return f"{self.name} {self.board}" + (f" {opts}" if opts else " fp32")

    def command(self, stack_bytes: int | None = None) -> str:
        """`mcu-gen build ...` for this point; with the stack `mcu-gen run` measured and reserved
        (stack_bytes), the command makes the very image whose RAM the table shows."""
        args = ["mcu-gen", "build", "--board", self.board, "--model", str(self.model)]
        for k, v in self.options.items():
            args += [OPTIONS[k][0], str(v)]
        if stack_bytes:
            args += ["--stack-bytes", str(stack_bytes)]
        return shlex.join(args)

    def key_fields(self) -> dict:
        return {"board": self.board, "options": dict(sorted(self.options.items()))}


def canonical(board, grid_point: dict) -> tuple[dict, list]:
    """(the options that apply on `board`, notes on the ones that do not)."""
    opts, notes = {}, []
    quantized = grid_point.get("quantize") is not None
    for k in OPTIONS:
        v = grid_point.get(k)
        if v is None:
            continue
        if k in INT8_ONLY and not quantized:
            notes.append(f"{OPTIONS[k][0]} {v}: int8 only, not applied without --quantize int8")
            continue
        if k == "npu" and not getattr(board, "npu", False):
            notes.append(f"--npu {v}: {board.name} has no NPU")
            continue
        opts[k] = v  # a default said explicitly stays: the command line shows what was swept
    return opts, notes


def expand(models, boards, grid: dict) -> tuple[list, list]:
    """(distinct points, grid points that were the same build as an earlier one: (label, same-as label)).
    `grid` is {option: [values]} (a missing option or [None]: the build's default)."""
    import itertools

    from mcu_gen.boards import get_board

    keys = [k for k in OPTIONS if grid.get(k)]
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))] or [{}]
    points, merged, seen = [], [], {}
    for m in models:
        for bname in boards:
            board = get_board(bname)
            for combo in combos:
                opts, notes = canonical(board, combo)
                p = Point(Path(m), board.name, opts, notes)
                ident = (str(p.model), p.board, tuple(sorted(opts.items())))
                if ident in seen:
                    label = " ".join(f"{OPTIONS[k][0]} {v}" for k, v in combo.items() if v is not None) or "defaults"
                    merged.append((f"{p.name} {p.board} {label}", seen[ident].label()))
                    continue
                seen[ident] = p
                points.append(p)
    return points, merged


def parse_bytes(text: str | None) -> int | None:
    """'64K' -> 65536, '1M' -> 1048576, '512000' -> 512000."""
    if text is None:
        return None
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if mult > 1 else t) * mult)
    except ValueError:
        raise ValueError(f"{text!r}: give bytes, e.g. 65536, 64K or 1M") from None
