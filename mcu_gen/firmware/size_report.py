"""Flash and RAM of a firmware image, by component.

Every byte the linker placed is attributed through the linker map (which
object file each input section came from); `nm` only names the largest
symbols. Components:

flash
  runtime_core  runtime/src/*.o (executor, verifier, protocol, CRC) and the
                generated src/main.cpp glue
  kernels       kernels/*.o and the generated kernel table (src/kernel_table.cpp)
  program       the .pte minus its constant segment: flatbuffer metadata,
                header, padding up to the segment (and mcu_model_pte_size)
  constants     the .pte's constant segment (weights), read in place
  board         board/*.o (startup, PAL), libc/libgcc/libm, linker fill

ram
  arena           the planned activation arena (g_arena)
  runtime_state   .bss/.data of runtime/src/*.o except the protocol's frame
                  buffers: the executors and server counters (plus any
                  kernel table or kernel state placed in RAM)
  protocol_io     the verify protocol's request and reply frames (g_request,
                  g_reply); a deployment without the verify protocol has none
  upload_buffer   the verify protocol's program-upload buffer (g_upload), a
                  test facility
  stack           the stack the linker script reserves
  board           .bss/.data of board/*.o and libc

Totals follow mcu_gen.report.memory_usage: flash = allocated flash sections +
.data's load image; RAM = allocated RAM sections.
"""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from collections import defaultdict
from pathlib import Path

FLASH_KEYS = ("runtime_core", "kernels", "program", "constants", "board")
RAM_KEYS = ("arena", "runtime_state", "protocol_io", "upload_buffer", "stack", "board")

_OUT = re.compile(r"^(\.[\w.]+)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+))?")
_IN_FULL = re.compile(r"^ ([.\w*][^\s]*)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+(\S.*?))?\s*$")
_IN_NAME = re.compile(r"^ ([.\w][^\s]*)\s*$")
_IN_CONT = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+(\S.*?))?\s*$")


def parse_map(map_path) -> list:
    """Allocated input sections of a GNU ld map: dicts with out, name, addr, size, file.

    `*fill*` (alignment padding) appears with name "*fill*" and file "".
    """
    text = Path(map_path).read_text(errors="replace").splitlines()
    try:
        start = next(i for i, l in enumerate(text) if l.startswith("Linker script and memory map"))
    except StopIteration:
        raise ValueError(f"{map_path}: not a GNU ld map file (no memory map)") from None
    out, rows, pending, outs = None, [], None, {}
    for line in text[start + 1:]:
        if line.startswith("."):
            m = _OUT.match(line)
            out = m.group(1) if m else None
            if m and m.group(2):
                outs[out] = (int(m.group(2), 16), int(m.group(3), 16))
            pending = None
            continue
        if line.startswith("/DISCARD/") or line.startswith("OUTPUT("):
            out = None
            continue
        if out is None:
            continue
        if pending is not None:
            m = _IN_CONT.match(line)
            if m:
                rows.append(dict(out=out, name=pending, addr=int(m.group(1), 16), size=int(m.group(2), 16),
                                 file=(m.group(3) or "").strip()))
            pending = None
            continue
        m = _IN_FULL.match(line)
        if m:
            rows.append(dict(out=out, name=m.group(1), addr=int(m.group(2), 16), size=int(m.group(3), 16),
                             file=(m.group(4) or "").strip()))
            continue
        m = _IN_NAME.match(line)
        if m and not m.group(1).startswith("*("):
            pending = m.group(1)
    return _clip(rows, outs)


def _clip(rows: list, outs: dict) -> list:
    """Drops overlaps: ld lists merged string sections with their size before
    merging, so consecutive rows can overlap; each byte is counted once, and
    only inside its output section."""
    clipped, end = [], {}
    for r in sorted(rows, key=lambda r: (r["out"], r["addr"])):
        lo, hi = r["addr"], r["addr"] + r["size"]
        if r["out"] in outs:
            o_lo, o_size = outs[r["out"]]
            lo, hi = max(lo, o_lo), min(hi, o_lo + o_size)
        lo = max(lo, end.get(r["out"], lo))
        if hi > lo:
            clipped.append(dict(r, addr=lo, size=hi - lo))
            end[r["out"]] = hi
    return clipped


def classify_file(path: str) -> str:
    """Component of an object file named in the map."""
    p = path.replace("\\", "/")
    if "/runtime/src/" in p or p.endswith("/src/main.cpp.obj") or p.endswith("/src/main.cpp.o"):
        return "runtime_core"
    if "/kernels/" in p or "/src/kernel_table.cpp" in p:
        return "kernels"
    if "/src/model_pte.c" in p:
        return "program"
    return "board"  # board/*.o, libc/libgcc/libm archives, linker-generated


def pte_split(pte_bytes: bytes, program=None) -> dict:
    """flatbuffer / segment bytes of a .pte (ET12 extended header 'eh00' at offset 8)."""
    if len(pte_bytes) >= 40 and pte_bytes[8:12] == b"eh00":
        _hlen, prog_size, seg_base, seg_size = struct.unpack_from("<IQQQ", pte_bytes, 12)
        return {"pte": len(pte_bytes), "flatbuffer": prog_size, "segment_base": seg_base, "segment": seg_size}
    inline = program.constant_bytes() if program is not None else 0
    return {"pte": len(pte_bytes), "flatbuffer": len(pte_bytes), "segment_base": 0, "segment": 0,
            "inline_constants": inline}


def _ram_component(name: str, component: str) -> str:
    if "g_arena" in name:
        return "arena"
    if "g_upload" in name:
        return "upload_buffer"
    if "g_request" in name or "g_reply" in name:
        return "protocol_io"
    if component in ("runtime_core", "kernels"):
        return "runtime_state"
    return "board"


def _nm_symbols(elf: Path, nm: str = "arm-none-eabi-nm") -> list:
    exe = shutil.which(nm)
    if exe is None:
        return []
    out = subprocess.run([exe, "-S", "-C", "--size-sort", "--defined-only", str(elf)], capture_output=True,
                         text=True).stdout
    syms = []
    for line in out.splitlines():
        p = line.split(None, 3)
        if len(p) == 4:
            syms.append((int(p[0], 16), int(p[1], 16), p[2], p[3]))
    return syms


def size_breakdown(elf_path, map_path, board, program=None, pte_bytes: bytes = b"") -> dict:
    """Flash and RAM of the image by component (bytes), plus the .pte split.

    board: mcu_gen.boards.Board (its flash and RAM regions); program: the
    mcu_gen.ir.Program (only used for legacy .pte files without a segment).
    """
    flash_lo, flash_hi = board.flash.base, board.flash.base + board.flash.size
    regions = board.ram_regions
    per_region = {r.name: 0 for r in regions}
    flash = dict.fromkeys(FLASH_KEYS, 0)
    ram = dict.fromkeys(RAM_KEYS, 0)
    ranges = defaultdict(list)  # component -> [(lo, hi)] of flash input sections, to name symbols
    split = pte_split(pte_bytes, program) if pte_bytes else None
    for r in parse_map(map_path):
        comp = classify_file(r["file"]) if r["name"] != "*fill*" else "board"
        in_flash = flash_lo <= r["addr"] < flash_hi
        region = next((g for g in regions if g.base <= r["addr"] < g.base + g.size), None)
        if r["out"] == ".stack":
            ram["stack"] += r["size"]
            per_region[board.ram_name] += r["size"]
            continue
        if region is not None:
            # The arenas of other RAM regions sit in their own output sections (.arena_<region>).
            ram["arena" if r["out"].startswith(".arena") else _ram_component(r["name"], comp)] += r["size"]
            per_region[region.name] += r["size"]
            if r["out"] == ".data":  # initial values stored in flash too
                flash[comp] += r["size"]
            continue
        if not in_flash:
            continue
        if r["out"] == ".pte" and comp == "program" and split is not None:
            seg = split["segment"] if split["segment"] else split.get("inline_constants", 0)
            seg = min(seg, r["size"])
            flash["constants"] += seg
            flash["program"] += r["size"] - seg
        else:
            flash[comp] += r["size"]
        ranges[comp].append((r["addr"], r["addr"] + r["size"]))

    symbols = defaultdict(list)
    for addr, size, kind, name in _nm_symbols(Path(elf_path), board.tool("nm")):
        if kind.lower() not in ("t", "r", "w", "d", "b", "v"):
            continue
        for comp, rs in ranges.items():
            if any(lo <= addr < hi for lo, hi in rs):
                symbols[comp].append((size, name))
                break
    top = {c: [{"name": n, "bytes": s} for s, n in sorted(v, reverse=True)[:8]] for c, v in symbols.items()}
    out = {
        "flash": flash,
        "ram": ram,
        "flash_bytes": sum(flash.values()),
        "ram_bytes": sum(ram.values()),
        "ram_regions": per_region,
        "top_symbols": top,
    }
    if split is not None:
        out["pte"] = split
    return out


def markdown_table(b: dict) -> str:
    """The breakdown as a markdown table, rows named as in ExecuTorch's paper where one matches."""
    f, r = b["flash"], b["ram"]
    rows = [
        ("Flash", "Runtime core (executor, verifier, protocol)", f["runtime_core"]),
        ("Flash", "Kernels (selected operators + kernel table)", f["kernels"]),
        ("Flash", "Program metadata (.pte without constants)", f["program"]),
        ("Flash", "Constants (weights, read in place)", f["constants"]),
        ("Flash", "Board (startup, PAL, libc/libgcc)", f["board"]),
        ("Flash", "**Total flash**", b["flash_bytes"]),
        ("RAM", "Memory Planned Arena", r["arena"]),
        ("RAM", "Method Allocator / runtime state (executors, server)", r["runtime_state"]),
        ("RAM", "Kernel Registry", 0),
        ("RAM", "Verify protocol frames (request + reply)", r["protocol_io"]),
        ("RAM", "Program upload buffer (test facility)", r["upload_buffer"]),
        ("RAM", "Stack (reserved)", r["stack"]),
        ("RAM", "Other BSS (board, libc)", r["board"]),
        ("RAM", "**Total RAM**", b["ram_bytes"]),
    ]
    lines = ["| memory | component | bytes | KiB |", "|---|---|---:|---:|"]
    for mem, name, n in rows:
        lines.append(f"| {mem} | {name} | {n:,} | {n / 1024:.1f} |")
    lines.append("")
    lines.append("Kernel Registry: the generated kernel table is const and lives in flash (counted under Kernels); "
                 "operators are resolved once at load into the executor's state.")
    return "\n".join(lines) + "\n"
