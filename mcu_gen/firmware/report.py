"""Build reports: report.json (machine-readable) and report.md (for people)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from mcu_gen.firmware.project import (BOUND_CALL_BYTES, INSTRUCTION_CACHE_ENTRY_BYTES, VALUE_CACHE_ENTRY_BYTES,
                                      frame_payload, program_id)
from mcu_gen.plan import planner
from mcu_gen.program import pte
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
    """flash_bytes and ram_bytes of a linked image, from its section addresses (a native executable's, the host
    board's, from its section names: its addresses are the process's)."""
    if board.is_native:
        sections = elf_sections(elf, board.tool("size"))
        flash = sum(sections.get(n, (0, 0))[0] for n in FLASH_SECTIONS)
        ram = sum(sections.get(n, (0, 0))[0] for n in (".data", ".bss"))
        return {"flash_bytes": flash, "ram_bytes": ram, "ram_regions": {board.ram_name: ram},
                "sections": {k: v[0] for k, v in sections.items()}}
    flash_lo, flash_hi = board.flash.base, board.flash.base + board.flash.size
    flash = ram = 0
    regions = {r.name: 0 for r in board.ram_regions}  # RAM bytes per region (ram_bytes: all of them)
    sections = elf_sections(elf, board.tool("size"))
    for name, (size, addr) in sections.items():
        if flash_lo <= addr < flash_hi:
            flash += size
            continue
        region = next((r for r in board.ram_regions if r.base <= addr < r.base + r.size), None)
        if region is not None:
            ram += size
            regions[region.name] += size
            if name == ".data":
                flash += size  # its initial values are stored in flash too
    return {"flash_bytes": flash, "ram_bytes": ram, "ram_regions": regions,
            "sections": {k: v[0] for k, v in sections.items()}}


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


def ram_section(r: dict) -> list:
    """The RAM of the image, split into what a deployment needs and what only the test harness adds, with
    the stack as reserved and as measured on the device."""
    size = r.get("size") or {}
    ram = size.get("ram")
    if not ram:
        return []
    st = r.get("stack") or {}
    measured, reserved = st.get("measured_bytes"), st.get("reserved_bytes", ram.get("stack", 0))
    upload = ram.get("upload_buffer", 0)
    bound = st.get("static_bound_bytes")
    if bound is not None:
        how = (f"reserved {reserved:,} B = {st['rule']}; static bound {bound:,} B (the deepest call path of the "
               f"image's machine code plus one exception, computed at build time)"
               + (f"; measured {measured:,} B on the device (high-water mark of the painted stack after the verify "
                  "runs)" if measured else "; `mcu-gen run` measures it on an emulated board"))
    elif measured:
        how = (f"reserved {reserved:,} B = {st['rule']}; measured {measured:,} B (high-water mark of the painted "
               "stack after the verify runs, reported by the device)") if st.get("rule") else (
               f"reserved {reserved:,} B (the linker script's default); measured {measured:,} B on the device")
    else:
        how = (f"reserved {reserved:,} B (the linker script's default: not measured yet; `mcu-gen run` measures "
               "it and relinks with what it used plus a margin)")
    first = st.get("measurement_build_bytes")
    rows = [
        ("arena (planned activations)", ram.get("arena", 0), "deployable"),
        ("runtime state (executor, server)", ram.get("runtime_state", 0), "deployable"),
        (f"protocol frames (request + reply, {r.get('frame_payload_bytes', '?')} B payload each: the serial I/O "
         "path the image is driven through)", ram.get("protocol_io", 0), "deployable"),
        ("stack, reserved", reserved, "deployable"),
        ("other .bss/.data (board, libc)", ram.get("board", 0), "deployable"),
        ("program upload buffer (LOAD_PROGRAM: model updates, verifier tests)", upload,
         "asked for (--upload)" if r.get("upload") else "none (no --upload)"),
    ]
    lines = ["## RAM", "", "| component | bytes | belongs to |", "|---|---:|---|"]
    for name, n, who in rows:
        lines.append(f"| {name} | {n:,} | {who} |")
    lines.append(f"| **total RAM of this image** | **{size.get('ram_bytes', r['ram_bytes']):,}** | |")
    lines += ["", f"Stack: {how}."]
    if st.get("unbounded_reason"):
        lines.append(f"No static stack bound: {st['unbounded_reason']}.")
    if first:
        lines.append(f"The image was first linked with the linker script's stack to measure it ({first:,} B used "
                     "there); this image is the relinked one, verified again on the device. That first image is "
                     "the test harness's only addition; nothing of it is in this one.")
    if r.get("upload"):
        lines.append("The upload buffer is in this image because the build asked for it (--upload).")
    lines.append("")
    return lines


def methods_section(r: dict) -> list:
    """A program with several methods (docs/methods.md): each method's plan, I/O and operators."""
    def io(ts):
        return ", ".join(f"{t['dtype']} {t['shape']}" for t in ts) or "none"

    lines = ["## Methods", "",
             f"{len(r['methods'])} methods share one constant segment ({r.get('constant_bytes', 0):,} B of "
             "constants, each stored once) and one arena, sized by the largest method; each method's plan is "
             "checked on its own (check_plan) and against the others (shared state at one offset, never "
             "overwritten by another method's tensors). `SELECT_METHOD name` makes a method the one RUN executes.",
             "", "| # | method | inputs | outputs | instructions | arena | lower bound without in-place | state (offset, bytes) | plan |",
             "|---|---|---|---|---:|---:|---:|---|---|"]
    for k, m in enumerate(r["methods"]):
        state = ", ".join(f"`{t['name']}` ({t['offset']:,}, {t['bytes']:,})" for t in m["state"]) or "none"
        lines.append(f"| {k} | `{m['name']}` | {io(m['inputs'])} | {io(m['outputs'])} | {m['instructions']} | "
                     f"{m['arena_bytes']:,} | {m['arena_lower_bound_bytes']:,} | {state} | {m.get('plan_strategy') or ''} |")
    lines.append("")
    for m in r["methods"][1:]:
        lines += [f"### Operators of method `{m['name']}`", "", "| # | operator | backend | dtype | source |",
                  "|---|---|---|---|---|"]
        for i, op in enumerate(m["operators"]):
            lines.append(f"| {i} | `{op['name']}` | {op['backend']} | {op['dtype']} | {op.get('source', '')} |")
        lines.append("")
    return lines


def regions_section(r: dict) -> list:
    """Per RAM region: the arena the planner put there, the image's bytes there after the link, and the
    share of the arena's predicted accesses (bytes read + written per inference) it serves."""
    regions = r.get("ram_regions")
    if not regions:
        return []
    linked = (r.get("size") or {}).get("ram_regions") or {}
    lines = ["## RAM regions", "",
             "Each region is one arena with fixed offsets (ExecuTorch memory id = planned buffer). The planner puts "
             "the tensors with the most bytes read + written per inference, per byte, in the fastest region that "
             "still has room; the access share is that model's prediction (QEMU does not time memories).", "",
             "| region | memory id | speed rank | room for the arena | arena | tensors | predicted access share | "
             "image RAM there |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for g in regions:
        lines.append(f"| {g['name']} | {g['memory_id']} | {g['speed']} | {g['budget_bytes']:,} | {g['arena_bytes']:,} | "
                     f"{g['buffers']} | {g['access_share']:.1%} | {linked.get(g['name'], 0):,} |")
    return lines + [""]


def _left_out(r: dict) -> int:
    """Bytes of model.pte the program in the image leaves out (the generated layers' external constants)."""
    return r["pte_bytes"] - r.get("embedded_pte_bytes", r["pte_bytes"])


def _embedded_text(r: dict) -> str:
    """What the generated layers' own weights leave out of the program in the image (external constants)."""
    left = _left_out(r)
    if left <= 0:
        return ", beside the program's int8 weights"
    return (f"; the program in the image is {r['embedded_pte_bytes']:,} bytes, {left:,} fewer than model.pte: the "
            "weights only these layers read are external constants there (docs/generated_kernels.md, \"Flash\")")


def markdown(r: dict) -> str:
    lines = [
        f"# mcu-gen build: {r.get('model', '?')} for {r['board']}",
        "",
        "| figure | bytes |",
        "|---|---|",
        f"| arena (planned activations) | {r['arena_bytes']:,} |",
        f"| arena lower bound without in-place (most bytes live at one step) | {r['arena_lower_bound_bytes']:,} |",
        f"| program (.pte) | {r['pte_bytes']:,} |",
        *([f"| program in the image (constants the generated layers hold left out) | {r['embedded_pte_bytes']:,} |"]
          if _left_out(r) > 0 else []),
        f"| of which constants (weights) | {r.get('constant_bytes', 0):,} |",
        f"| firmware flash | {r['flash_bytes']:,} |",
        f"| firmware RAM (.data + .bss + reserved stack: everything the image takes) | {r['ram_bytes']:,} |",
        "",
    ]
    lines += ram_section(r)
    if r.get("methods"):
        lines += methods_section(r)
    lines += regions_section(r)
    lines += [
        "## Operators" + (f" (method `{r['methods'][0]['name']}`)" if r.get("methods") else ""),
        "",
        "| # | operator | backend | dtype | source |",
        "|---|---|---|---|---|",
    ]
    for i, op in enumerate(r["operators"]):
        lines.append(f"| {i} | `{op['name']}` | {op['backend']} | {op['dtype']} | {op.get('source', '')} |")
    lines.append("")
    gen = r.get("generated_kernels") or {}
    if gen.get("available_layers"):
        lines += [f"{generated_hint(gen['available_layers'])}", ""]
    if gen.get("layers") or gen.get("skipped"):
        mve = gen.get("isa") == "mve"  # MVE kernels keep int8 reordered weights, DSP ones int16 pre-widened
        what, key = (("reordered int8", "reordered_weight_bytes") if mve
                     else ("pre-widened int16", "prewidened_weight_bytes"))
        lines += ["## Generated kernels", "",
                  f"mcu-gen's per-layer int8 kernels (`--kernels {gen.get('mode', 'auto')}`; docs/generated_kernels.md). "
                  f"Their {what} weights take **{gen.get(key, 0):,} bytes of flash** "
                  "(included in the firmware flash above)" + _embedded_text(r) + ".", "",
                  f"| # | kind | shape | MACs | requantization | {what} weight bytes |", "|---|---|---|---|---|---|"]
        for l in gen.get("layers", []):
            lines.append(f"| {l['instruction']} | {l['kind']} | {l['shape']} | {l['macs']:,} | {l['requant']} | "
                         f"{l.get(key, 0):,} |")
        for sk in gen.get("skipped", []):
            lines.append(f"| {sk['instruction']} | library kernel | {sk['reason']} | | | |")

    if r.get("state"):
        lines += ["## State (kept in the arena from one run to the next)", "",
                  "Each state tensor is live at every step, never shares bytes with another tensor, is set "
                  "to its initial value (stored with the constants) at load and on RESET, and is written at "
                  "the end of each run.", "",
                  "| buffer | shape | dtype | scale / zero point | arena offset | bytes | live steps | written by |",
                  "|---|---|---|---|---:|---:|---|---|"]
        for t in r["state"]:
            used_by = f"; methods {', '.join(t['methods'])}" if r.get("methods") else ""
            q = f"{t['scale']:.6g} / {t['zero_point']}" if t.get("scale") is not None else ""
            w = t.get("written_by")
            how = (f"#{w['instruction']} `{w['op']}` ({'a copy' if w['copy'] else 'in place'})" if w else "")
            lines.append(f"| `{t['name']}` | {t['shape']} | {t['dtype']} | {q} | {t['offset']:,} | {t['bytes']:,} | "
                         f"{t['live_steps'][0]}-{t['live_steps'][1]} (all){used_by} | {how} |")
        lines.append("")
        if any(t.get("scale") is not None for t in r["state"]):
            lines += ["An int8 state keeps one scale and zero point: the quantizer calibrated it over sequences "
                      "(step by step, the state carried), and its new value is quantized the same way, so the "
                      "write back is a plain int8 copy (or the operator computing it writes the state itself).", ""]
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
            cost = ""
            if f.get("kernels") is not None:
                cost = f"; runs {', '.join(f['kernels'])}, {f.get('fp32_bytes', 0)} B of fp32 values"
            lines.append(f"- `{f['op']}`: {f['reason']}{cost}" + (f" ({f['source']})" if f.get("source") else ""))
        lines.append("")
        lines += calibration_section(r.get("calibration"))
        errors = r.get("int8_operator_error") or []
        failed = [e["unavailable"] for e in errors if "unavailable" in e]
        errors = [e for e in errors if "unavailable" not in e]
        if failed:
            lines += ["### Error of the int8 graph against fp32, per operator", "",
                      f"Not measured: {'; '.join(failed)}.", ""]
        if errors:
            lines += ["### Error of the int8 graph against fp32, per operator", "",
                      "Integer reference on the first calibration input, each int8 result dequantized and "
                      "compared with the same node of the fp32 model.", "",
                      "| node | operator | scale | max abs error | relative to max abs fp32 |", "|---|---|---|---|---|"]
            for e in errors:
                lines.append(f"| {e['node']} | `{e['op']}` | {e['scale']:.3g} | {e['max_abs_error']:.3g} | "
                             f"{e['rel_error']:.2%} |")
            lines.append("")
    return "\n".join(lines)


def calibration_section(cal) -> list:
    """report.md: how calibration went, every method's error on the user's data, a recommendation."""
    if not cal:
        return []
    bc = " with bias correction" if cal.get("bias_correction") else ""
    held = f" ({cal['held_out']} more held out: what `mcu-gen run` verifies on)" if cal.get("held_out") else ""
    how = (" (chosen by `auto`: the lowest relative RMS error in the table below)"
           if cal.get("selected") == "auto" and cal.get("rows") else "")
    lines = ["### Calibration", "", f"Method `{cal['method']}`{bc}{how}, on {cal['samples']} sample(s){held}."]
    rows = cal.get("rows") or []
    if rows:
        lines += ["", f"Every method, measured on {cal.get('compared_on', 'the calibration data')}: the PT2E "
                  "quantized graph against fp32 (relative RMS error: RMS error / RMS of the fp32 output).", "",
                  "| method | bias correction | relative RMS error | max abs error |", "|---|---|---|---|"]
        for row in rows:
            mark = " (used)" if row["method"] == cal["method"] and row["bias_correction"] == cal.get("bias_correction") else ""
            lines.append(f"| {row['method']}{mark} | {'yes' if row['bias_correction'] else 'no'} | "
                         f"{row['relative_rms_error']:.4g} | {row['max_abs_error']:.4g} |")
    rec = cal.get("recommended")
    lines.append("")
    if rec:
        flag = f"--calibration-method {rec['method']}" + (" --bias-correction" if rec["bias_correction"] else "")
        lines.append(f"**Recommended: `{flag}`**: relative RMS error {rec['relative_rms_error']:.4g} against "
                     f"{rec['chosen_relative_rms_error']:.4g} with the method used, on this calibration data.")
    elif rows:
        lines.append("No other method is measurably (10%) more accurate on this data.")
    return lines + [""]


def generated_hint(n: int) -> str:
    """What a library-kernel build could use instead: a count of this build's layers, no claimed figure
    (what the generated kernels gain is measured per build: `--kernels auto` and `mcu-gen run`)."""
    return (f"{n} layer(s) could run on int8 kernels generated for this core: `--kernels auto` "
            "(they cost flash for reordered weights; compare this build's instructions per inference and RAM "
            "with `mcu-gen run` on both; docs/generated_kernels.md)")


# -- report.json of a build -------------------------------------------------------------------------
def build_report(out: Path, name: str, b, program: Program, data: bytes, usage: dict, sel, *, upload: bool,
                 frame_bytes, quantize, io: str, spec, backend_choice, kernels: str, gen, num_values: int,
                 cache: int, num_instructions: int, icache: int, bound_calls: int, npu_build,
                 embedded: bytes | None = None) -> dict:
    """report.json's content for a build of ``program`` (its bytes ``data``) on board ``b``: sizes
    (``usage`` from the linked ELF), plan, operators and kernels (``sel``), I/O, state, methods,
    quantization, backend, generated kernels (``gen``), value and instruction caches, Ethos-U; writes the
    plan pictures into ``out``."""
    report = {
        "model": name,
        "board": b.name,
        "core": b.core,
        "program_id": f"{program_id(data):016x}",
        "arena_bytes": program.max_arena_size + sum(program.extra_arenas),
        **({"ram_regions": program.meta["regions"]} if program.meta.get("regions") else {}),
        "arena_lower_bound_bytes": program.lower_bound or planner.lower_bound(planner.lifetimes(program).values()),
        "pte_bytes": len(data),
        # the program in the image: model.pte less the constants generated layers hold (external constants)
        "embedded_pte_bytes": len(embedded if embedded is not None else data),
        "constant_bytes": program.constant_bytes(),
        "flash_bytes": usage["flash_bytes"],
        "ram_bytes": usage["ram_bytes"],
        "sections": usage["sections"],
        "size": usage.get("size"),
        "upload": bool(upload),
        "frame_payload_bytes": frame_payload(program, frame_bytes),
        "stack": {"reserved_bytes": usage["sections"].get(".stack", 0), "measured_bytes": None},
        "operators": operator_rows(program, sel),
        "kernels": sorted({k.file.name for k in sel.kernels}),
        "inputs": [_io(program, i) for i in program.inputs],
        "outputs": [_io(program, i) for i in program.outputs],
    }
    if program.all_states:
        report["state"] = [{"name": name, "shape": list(m.tensor(i).shape), "dtype": m.tensor(i).dtype,
                            "offset": m.tensor(i).offset, "bytes": m.tensor(i).nbytes,
                            "live_steps": [0, max(len(m.instructions) - 1, 0)], "written_by": _state_writer(m, i),
                            "methods": [o.name for o in program.methods if name in o.state_names],
                            **({"scale": m.tensor(i).scale, "zero_point": m.tensor(i).zero_point}
                               if m.tensor(i).dtype == "int8" else {})}
                           for name, m, i in program.all_states]
    if program.more_methods:
        report["methods"] = [method_row(m, sel) for m in program.methods]
    if quantize is not None:
        report["quantize"] = quantize
        report["io"] = io
        report["fp32_fallback"] = program.meta.get("fp32_fallback", [])
        report["calibration"] = program.meta.get("calibration")  # methods compared (quantize/calibration.py)
        if spec is not None and spec.module is not None:
            from mcu_gen.reference.accuracy import operator_errors

            report["int8_operator_error"] = operator_errors(program, spec)
    report["peak_ops"] = _write_plan_pictures(out, program)
    report["backend"] = backend_choice.report()
    report["generated_kernels"] = {"mode": kernels, **gen.report()}
    for layer in gen.layers:
        report["operators"][layer.instruction]["backend"] = "generated"
        report["operators"][layer.instruction]["kernel"] = layer.name
    # Bound calls: a flash table without uploads (project.bound_table_source), else RAM pairs.
    bound_table = bound_calls > 0 and not upload
    report["value_cache"] = {"values": num_values, "cached_values": min(cache, num_values),
                             "instructions": num_instructions,
                             "cached_instructions": min(icache, num_instructions),
                             "bytes": VALUE_CACHE_ENTRY_BYTES * max(1, cache)
                             + INSTRUCTION_CACHE_ENTRY_BYTES * max(1, icache)
                             + (0 if bound_table else BOUND_CALL_BYTES * bound_calls),
                             "bound_calls": bound_calls, "bound_table": bound_table}
    if npu_build is not None:
        report["ethos_u"] = npu_build.report
        for row in report["operators"]:
            if row["name"].startswith(pte.DELEGATE_PREFIX):
                row["backend"] = "ethos-u"
    return report


def _state_writer(program: Program, state: int):
    """The instruction that writes a state's new value: {"instruction", "op", "copy"} (a copy
    at the end of the run, or the operator computing the value writing the state in place)."""
    for k, ins in enumerate(program.instructions):
        if ins.args and ins.args[-1] == state:
            return {"instruction": k, "op": ins.op, "copy": ins.op in ("aten::clone.out", "aten::copy_.out",
                                                                       "aten::copy_")}
    for k, ins in enumerate(program.instructions):  # e.g. ExecuTorch's aten::copy_(state, value)
        if ins.args and ins.args[0] == state:
            return {"instruction": k, "op": ins.op, "copy": True}
    return None


def method_row(m: Program, sel) -> dict:
    """report.json's entry for one method of a program with several: its plan and I/O."""
    return {"name": m.name, "arena_bytes": m.arena_size,
            "arena_lower_bound_bytes": m.lower_bound or planner.lower_bound(planner.lifetimes(m).values()),
            "instructions": len(m.instructions), "plan_strategy": (m.meta.get("plan") or {}).get("strategy"),
            "inputs": [_io(m, i) for i in m.inputs], "outputs": [_io(m, i) for i in m.outputs],
            "state": [{"name": n, "offset": m.tensor(i).offset, "bytes": m.tensor(i).nbytes}
                      for i, n in zip(m.states, m.state_names)],
            "operators": operator_rows(m, sel)}


def _write_plan_pictures(out: Path, program: Program) -> list:
    """plan.svg and plan.png (when matplotlib is installed) next to report.json; returns the peak ops."""
    from mcu_gen.plan import picture as plan_report

    plan_report.write_svg(program, out / "plan.svg")
    try:
        plan_report.write_png(program, out / "plan.png")
    except ImportError:
        pass
    return plan_report.peak_ops(program)


def _io(program: Program, i: int) -> dict:
    t: TensorValue = program.tensor(i)
    row = {"shape": list(t.shape), "dtype": t.dtype, "offset": t.offset, "bytes": t.nbytes}
    if t.dtype == "int8" and t.scale is not None:
        row.update(scale=float(t.scale), zero_point=int(t.zero_point), dim_order=list(t.dim_order))
    return row


def load_report(out: Path) -> dict:
    return json.loads((Path(out) / "report.json").read_text())
