"""Build reports: report.json (machine-readable) and report.md (for people)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from mcu_gen.program.ir import Program, TensorValue

# Sections that occupy flash / RAM in our linker scripts.
FLASH_SECTIONS = (".text", ".rodata", ".ARM.exidx", ".ARM.extab", ".pte", ".data", ".vectors", ".boot")
RAM_SECTIONS = (".data", ".bss", ".stack", ".noinit", ".arena", ".heap")


def elf_sections(elf: Path, size_tool: str = "arm-none-eabi-size") -> dict:
    """name -> (size, address) from `size -A`."""
    exe = shutil.which(size_tool)
    if exe is None:
        return {}
    out = subprocess.run([exe, "-A", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    sections = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = (int(parts[1]), int(parts[2]))
    return sections


def memory_usage(elf: Path, board) -> dict:
    """flash_bytes and ram_bytes of a linked image, from its section addresses."""
    flash_lo, flash_hi = board.flash.base, board.flash.base + board.flash.size
    ram_lo, ram_hi = board.ram.base, board.ram.base + board.ram.size
    flash = ram = 0
    sections = elf_sections(elf)
    for name, (size, addr) in sections.items():
        if flash_lo <= addr < flash_hi:
            flash += size
        elif ram_lo <= addr < ram_hi:
            ram += size
            if name == ".data":
                flash += size  # its initial values are stored in flash too
    return {"flash_bytes": flash, "ram_bytes": ram, "sections": {k: v[0] for k, v in sections.items()}}


def operator_rows(program: Program, selection) -> list:
    backend = {k.op: k.backend for k in selection.kernels}
    rows = []
    for ins in program.instructions:
        dtype = "float32"
        for a in ins.args:
            v = program.values[a]
            if isinstance(v, TensorValue):
                dtype = v.dtype
                break
        rows.append({"name": ins.op, "backend": backend.get(ins.op, "missing"), "dtype": dtype, "source": ins.source})
    return rows


def write_reports(out: Path, report: dict) -> None:
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))


def markdown(r: dict) -> str:
    lines = [
        f"# mcu-gen build: {r.get('model', '?')} for {r['board']}",
        "",
        "| figure | bytes |",
        "|---|---|",
        f"| arena (planned activations) | {r['arena_bytes']:,} |",
        f"| arena lower bound (most bytes live at one step) | {r['arena_lower_bound_bytes']:,} |",
        f"| program (.pte) | {r['pte_bytes']:,} |",
        f"| of which constants (weights) | {r.get('constant_bytes', 0):,} |",
        f"| firmware flash | {r['flash_bytes']:,} |",
        f"| firmware RAM (arena, stack, state) | {r['ram_bytes']:,} |",
        "",
        "## Operators",
        "",
        "| # | operator | backend | dtype | source |",
        "|---|---|---|---|---|",
    ]
    for i, op in enumerate(r["operators"]):
        lines.append(f"| {i} | `{op['name']}` | {op['backend']} | {op['dtype']} | {op.get('source', '')} |")
    lines.append("")
    if r.get("state"):
        lines += ["## State (kept in the arena from one run to the next)", "",
                  "Each state tensor is live at every step, never shares bytes with another tensor, is set "
                  "to its initial value (stored with the constants) at load and on RESET, and is written at "
                  "the end of each run.", "",
                  "| buffer | shape | dtype | arena offset | bytes | live steps |", "|---|---|---|---:|---:|---|"]
        for t in r["state"]:
            lines.append(f"| `{t['name']}` | {t['shape']} | {t['dtype']} | {t['offset']:,} | {t['bytes']:,} | "
                         f"{t['live_steps'][0]}-{t['live_steps'][1]} (all) |")
        lines.append("")
    if r.get("size"):
        from mcu_gen.firmware.size_report import markdown_table

        lines += ["## Memory by component", "", markdown_table(r["size"]), ""]
    if r.get("quantize"):
        lines += ["## Quantization", "", f"{r['quantize']}, graph I/O {r.get('io', 'float32')}.", "",
                  "| tensor | shape | dtype | scale | zero point |", "|---|---|---|---|---|"]
        for kind in ("inputs", "outputs"):
            for k, t in enumerate(r.get(kind, [])):
                lines.append(f"| {kind[:-1]} {k} | {t['shape']} | {t['dtype']} | {t.get('scale', '')} | "
                             f"{t.get('zero_point', '')} |")
        lines.append("")
        fallback = r.get("fp32_fallback") or []
        lines += ["### Operators left in fp32", ""]
        if not fallback:
            lines.append("None: every operator runs in int8.")
        for f in fallback:
            lines.append(f"- `{f['op']}`: {f['reason']}" + (f" ({f['source']})" if f.get("source") else ""))
        lines.append("")
    return "\n".join(lines)
