"""Which instructions of an int8 program the Ethos-U can run, grouped into subgraphs.

A subgraph is a run of consecutive supported instructions (in program order). Its inputs are
the arena tensors it reads but does not produce; its outputs are the tensors it produces that
are read after it or are program outputs. Everything else stays on the CPU (CMSIS-NN or the
portable kernels). The checks below are the constraints of Vela's TOSA path for the operators
mcu-gen's int8 lowering emits; anything Vela still rejects is reported when compiling.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mcu_gen.program.ir import Program, ScalarValue, TensorValue
from mcu_gen.backends.ethosu.targets import NpuTarget

# op -> index of its activation input; the output is always the last argument.
NPU_OPS = {
    "cortex_m::quantized_conv2d.out": 0,
    "cortex_m::quantized_depthwise_conv2d.out": 0,
    "cortex_m::quantized_linear.out": 0,
    "cortex_m::quantized_max_pool2d.out": 0,
    "cortex_m::quantized_avg_pool2d.out": 0,
}


@dataclass
class Subgraph:
    instructions: list  # instruction indices, consecutive
    inputs: list = field(default_factory=list)  # value indices (arena tensors)
    outputs: list = field(default_factory=list)


@dataclass
class Partition:
    subgraphs: list
    cpu: list  # [(instruction index, op, reason)]

    def summary(self, program: Program) -> dict:
        npu_ops = [program.instructions[i].op for sg in self.subgraphs for i in sg.instructions]
        return {"npu_operators": len(npu_ops), "cpu_operators": len(self.cpu),
                "subgraphs": [{"instructions": sg.instructions,
                               "operators": [program.instructions[i].op for i in sg.instructions],
                               "inputs": sg.inputs, "outputs": sg.outputs} for sg in self.subgraphs],
                "cpu": [{"instruction": i, "op": op, "reason": r} for i, op, r in self.cpu]}


def _scalar(program: Program, v: int):
    x = program.values[v]
    return x.value if isinstance(x, ScalarValue) else None


def unsupported_reason(program: Program, ins, npu: NpuTarget) -> str | None:
    """None when the NPU runs this instruction, else why not."""
    if ins.op not in NPU_OPS:
        return "no Ethos-U lowering for this operator"
    a = ins.args
    x = program.values[a[NPU_OPS[ins.op]]]
    out = program.values[a[-1]]
    if not isinstance(x, TensorValue) or x.dtype != "int8" or out.dtype != "int8":
        return "not int8"
    if x.shape[0] != 1:
        return "batch size must be 1"
    name = ins.op.split("::")[1].rsplit(".", 1)[0]
    if name in ("quantized_conv2d", "quantized_depthwise_conv2d"):
        w = program.values[a[1]]
        if not w.is_constant:
            return "weights are not constant"
        stride, dilation = _scalar(program, a[3]), _scalar(program, a[5])
        kh, kw = (w.shape[1], w.shape[2])
        if max(stride) > 3:
            return f"stride {stride} (Ethos-U: 1..3)"
        if kh * kw > 64 * 64 or kh > 64 or kw > 64:
            return f"kernel {kh}x{kw} too large"
        if dilation != [1, 1] and max(dilation) > 2:
            return f"dilation {dilation} (Ethos-U: 1..2)"
        if name == "quantized_depthwise_conv2d" and _scalar(program, a[6]) != 1:
            return "depthwise multiplier other than 1"
    elif name in ("quantized_max_pool2d", "quantized_avg_pool2d"):
        kernel, stride = _scalar(program, a[1]), pool_stride(program, ins)
        if max(stride) > 3:
            return f"stride {stride} (Ethos-U: 1..3)"
        limit = 8 if (name == "quantized_avg_pool2d" and any(_scalar(program, a[3]))) else 256
        if kernel[0] * kernel[1] > limit * limit or max(kernel) > limit:
            return f"pool kernel {kernel} too large"
    elif name == "quantized_linear":
        if not program.values[a[1]].is_constant:
            return "weights are not constant"
        ksum = program.values[a[3]]
        if isinstance(ksum, TensorValue) and (not ksum.is_constant or _scalar(program, a[5])):
            return "kernel_sum form of linear with a non-constant kernel sum or a weight offset"
    return None


def pool_stride(program: Program, ins) -> list:
    """A pool's stride, taken as 1 along a dimension with one output (a global pool)."""
    a = ins.args
    stride = list(_scalar(program, a[2]))
    out = program.values[a[-1]]
    return [1 if out.shape[2 + d] == 1 else stride[d] for d in range(2)]


def alias_root(program: Program, v: int) -> int:
    aliases = program.meta.get("aliases", {})
    while v in aliases:
        v = aliases[v]
    return v


def partition(program: Program, npu: NpuTarget) -> Partition:
    runs, cpu, current = [], [], []
    for i, ins in enumerate(program.instructions):
        reason = unsupported_reason(program, ins, npu)
        if reason is None:
            current.append(i)
            continue
        cpu.append((i, ins.op, reason))
        if current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    subgraphs = [_boundary(program, run) for run in runs]
    return Partition(subgraphs, cpu)


def _boundary(program: Program, run: list) -> Subgraph:
    """Inputs and outputs of a run of instructions (alias roots stand for their views)."""
    produced = {}
    inputs = []
    for i in run:
        ins = program.instructions[i]
        x = ins.args[NPU_OPS[ins.op]]
        root = alias_root(program, x)
        if root not in produced and x not in produced and x not in inputs:
            inputs.append(x)
        produced[ins.args[-1]] = i
    last = run[-1]
    used_after = set()
    for ins in program.instructions[last + 1:]:
        for a in ins.args:
            used_after.add(alias_root(program, a))
    outs = set(alias_root(program, o) for o in program.outputs)
    outputs = [v for v in produced if v in used_after or v in outs]
    return Subgraph(list(run), inputs, outputs)
