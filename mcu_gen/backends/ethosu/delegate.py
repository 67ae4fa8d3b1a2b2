"""Replace the NPU subgraphs of an int8 program by Ethos-U delegate calls.

Each subgraph becomes one instruction ``Instruction(op="delegate:<k>", args=inputs + [scratch] + outputs)``
where k indexes ``program.meta["delegates"]`` (a list of dicts: id "EthosUBackend", processed
= the vela_bin_stream blob, compile_specs, n_inputs, n_outputs). The scratch argument is a uint8
arena tensor of Vela's scratch size: the planner places it like any other tensor, so Vela's
scratch is part of the one static arena. pte.write turns these into ExecuTorch DelegateCalls.
Values only the replaced instructions used become None values (indices stay stable), so the
weights Vela re-encoded into the blob are not stored twice.
"""
from __future__ import annotations

import copy

from mcu_gen.program.ir import Instruction, Program, ScalarValue, TensorValue
from mcu_gen.backends.ethosu.partition import partition
from mcu_gen.backends.ethosu.targets import NpuTarget
from mcu_gen.backends.ethosu.tosa_lowering import lower_subgraph
from mcu_gen.backends.ethosu.vela import compile_tosa

BACKEND_ID = "EthosUBackend"
DELEGATE_PREFIX = "delegate:"
SCRATCH_ALIGNMENT = 16


def is_delegate_op(op: str) -> bool:
    return op.startswith(DELEGATE_PREFIX)


def delegate_index(op: str) -> int:
    return int(op[len(DELEGATE_PREFIX):])


def delegate_program(program: Program, npu: NpuTarget) -> tuple[Program, dict]:
    """(new unplanned program, report["ethos_u"] dict)."""
    part = partition(program, npu)
    p = copy.deepcopy(program)
    for v in p.values:
        if isinstance(v, TensorValue) and not v.is_constant:
            v.offset = None
    delegates, reports = [], []
    replaced = {}
    for k, sg in enumerate(part.subgraphs):
        graph = lower_subgraph(program, sg)
        result = compile_tosa(graph.flatbuffer, npu, name=f"{program.name}_npu{k}")
        entry = {"index": k, "instructions": sg.instructions,
                 "operators": [program.instructions[i].op for i in sg.instructions],
                 "tosa_operators": graph.operators, "tosa_bytes": len(graph.flatbuffer),
                 "inputs": sg.inputs, "outputs": sg.outputs,
                 "command_stream_bytes": len(result.cmd_data), "weight_bytes": len(result.weight_data),
                 "scratch_bytes": result.scratch_size, "vela": result.estimates}
        scratch = p.add(TensorValue((max(result.scratch_size, 1),), "uint8", name=f"ethosu{k}_scratch"))
        blob = result.blob()
        delegates.append({"id": BACKEND_ID, "processed": blob, "n_inputs": len(sg.inputs),
                          "n_outputs": len(sg.outputs),
                          "compile_specs": [("target", npu.name.encode()),
                                            ("system_config", npu.system_config.encode()),
                                            ("memory_mode", npu.memory_mode.encode())]})
        entry["blob_bytes"] = len(blob)
        reports.append(entry)
        replaced[sg.instructions[0]] = Instruction(f"{DELEGATE_PREFIX}{k}", list(sg.inputs) + [scratch] + list(sg.outputs),
                                                   source=f"Ethos-U subgraph {k}")
        for i in sg.instructions[1:]:
            replaced[i] = None
    p.instructions = [replaced.get(i, ins) for i, ins in enumerate(p.instructions) if replaced.get(i, ins) is not None]
    _drop_unused(p)
    p.meta["delegates"] = delegates
    summary = part.summary(program)
    report = {"npu": npu.name, "system_config": npu.system_config, "memory_mode": npu.memory_mode,
              "npu_operators": summary["npu_operators"], "cpu_operators": summary["cpu_operators"],
              "cpu": summary["cpu"], "subgraphs": reports,
              "vela_cycles_total": sum(r["vela"].get("cycles_total", 0) for r in reports),
              "vela_scratch_bytes": sum(r["scratch_bytes"] for r in reports)}
    p.meta["ethos_u"] = report
    return p, report


def _drop_unused(p: Program) -> None:
    used = set(p.inputs) | set(p.outputs)
    for ins in p.instructions:
        for a in ins.args:
            used.add(a)
            v = p.values[a]
            if isinstance(v, ScalarValue) and v.kind in ("tensor_list", "optional_tensor_list"):
                used.update(x for x in v.value if x is not None and x >= 0)
    aliases = dict(p.meta.get("aliases", {}))
    # An alias keeps its root alive.
    changed = True
    while changed:
        changed = False
        for a, r in aliases.items():
            if a in used and r not in used:
                used.add(r)
                changed = True
    for i, v in enumerate(p.values):
        if isinstance(v, TensorValue) and i not in used:
            p.values[i] = ScalarValue("none")
    if aliases:
        p.meta["aliases"] = {a: r for a, r in aliases.items() if a in used}
