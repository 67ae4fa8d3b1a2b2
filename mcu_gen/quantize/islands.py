"""fp32 islands of an int8 graph: an operator without an int8 lowering runs in fp32 between a
dequantize and a quantize, decomposed to the same core-ATen operator set (and through the
same graph passes) as the fp32 path, so that whatever runs in fp32 also runs as an island.

    values = lower_island(fp_lowering, node, inputs, constants)

The converted PT2E graph is pre-dispatch ATen (aten.conv1d, aten.layer_norm,
aten.adaptive_avg_pool2d, ...), for which the targets have no kernels. Each island operator
is captured on its own with torch.export, decomposed (``run_decompositions()``, what
``mcu_gen.export.capture`` does), run through ``mcu_gen.passes.run_passes`` and lowered
into the same Program.
"""
from __future__ import annotations

import operator

import numpy as np
import torch
import torch.fx

from mcu_gen.capture.export import ExportError, UnsupportedOperatorError, Fp32Lowering, op_name, source_line, to_const_graph, to_core_aten
from mcu_gen.capture.passes import run_passes
from mcu_gen.program.ir import TensorValue


class _Nodes(torch.nn.Module):
    """The fx nodes ``nodes`` run in order (an operator, or one with the complex-valued operators
    before it: stft then abs), with the fx nodes they read replaced by the module's tensor inputs
    (activations) and buffers (constants); returns the last node's result."""

    def __init__(self, nodes: list, activations: list, constants: dict):
        super().__init__()
        self.nodes = [(n, n.target, n.args, n.kwargs) for n in nodes]
        self.activations = activations
        self.const_names = {}
        for k, (n, t) in enumerate(constants.items()):
            name = f"c{k}"
            self.register_buffer(name, t.detach().clone().contiguous())
            self.const_names[n] = name

    def forward(self, *xs):
        target = self.nodes[-1][1]
        if len(self.nodes) == 1 and target._schema.is_mutable:
            xs = tuple(x.clone() for x in xs)  # hardswish_(x): the island's copy of x, not its input (functionalized)
        env = dict(zip(self.activations, xs))

        def sub(a):
            if isinstance(a, torch.fx.Node):
                return env[a] if a in env else getattr(self, self.const_names[a])
            if isinstance(a, (list, tuple)):
                return type(a)(sub(b) for b in a)
            return a

        for node, target, args, kwargs in self.nodes:
            env[node] = target(*sub(args), **{k: sub(v) for k, v in kwargs.items()})
        return env[self.nodes[-1][0]]


_TORCH_DTYPES = {"float32": torch.float32, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool,
                 "int8": torch.int8, "uint8": torch.uint8}


def _example(program, value: int) -> torch.Tensor:
    t = program.tensor(value)
    return torch.zeros(tuple(int(s) for s in t.shape), dtype=_TORCH_DTYPES[t.dtype])


def lower_island(fp: Fp32Lowering, nodes, activations: dict, constants: dict):
    """Lower ``nodes`` (an fx node, or a list run in order whose last one gives the result) in fp32 into
    ``fp.program``: ``activations`` maps input fx nodes to fp32 values of the program, ``constants`` input
    fx nodes to tensors. Returns the value (or list of values, for an operator with several results) of
    the last node.
    An input that is a constant of the program (an LSTM's zero initial state, folded before the island)
    goes in as a constant: the island's graph passes fold what it computes from it (its slices), instead of
    instructions that copy constants into the arena."""
    nodes = list(nodes) if isinstance(nodes, (list, tuple)) else [nodes]
    node = nodes[-1]
    activations, constants = dict(activations), dict(constants)
    # not for an in-place target (fill_, masked_fill_): it would write the constant, a buffer mutation
    mutable = isinstance(node.target, torch._ops.OpOverload) and node.target._schema.is_mutable
    for a, v in ([] if mutable else list(activations.items())):
        t = fp.program.values[v]
        if (isinstance(t, TensorValue) and t.is_constant and t.dtype in _TORCH_DTYPES
                and tuple(t.dim_order) == tuple(range(len(t.shape)))):
            constants[a] = torch.from_numpy(np.array(t.data, copy=True)).reshape(tuple(t.shape)).to(_TORCH_DTYPES[t.dtype])
            del activations[a]
    acts = list(activations)
    what = " -> ".join(op_name(n.target) if isinstance(n.target, torch._ops.OpOverload) else str(n.target)
                       for n in nodes)
    try:
        ep = torch.export.export(_Nodes(nodes, acts, constants), tuple(_example(fp.program, activations[a]) for a in acts))
        ep = to_core_aten(ep)
    except Exception as e:
        raise ExportError(f"{what}: cannot decompose it to core ATen for an fp32 island: "
                          f"{type(e).__name__}: {e}") from e
    cg, inputs = to_const_graph(ep)[:2]
    out_node = next(n for n in cg.graph.nodes if n.op == "output")
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)) and node.users and all(u.target is operator.getitem for u in node.users):
        # Results the graph never reads (an LSTM's final h and c when only its output is used) are not
        # computed: no instructions, no arena tensors kept to the end for them.
        used = {u.args[1] for u in node.users}
        out_node.args = ([o if k in used else None for k, o in enumerate(out_node.args[0])],)
        cg.graph.eliminate_dead_code()
    run_passes(cg, fuse=True)
    out_node = next(n for n in cg.graph.nodes if n.op == "output")
    outputs = list(out_node.args[0])
    sub = Fp32Lowering(cg, fp.user_file, fp.has_kernel)
    sub.program, sub.aliases = fp.program, fp.aliases
    for ph, a in zip(inputs, acts):
        sub.env[ph] = activations[a]
    first = len(fp.program.instructions)
    src = source_line(nodes[0], fp.user_file)
    try:
        for n in cg.graph.nodes:
            if n.op == "get_attr":
                sub.env[n] = sub.constant_value(cg.const(n), f"{node.name}_{n.name}")
            elif n.op == "call_function":
                sub.lower_call(n)
    except UnsupportedOperatorError as e:
        raise UnsupportedOperatorError(f"{what} (in fp32, decomposed to core ATen): {e}\n  at {src}") from None
    for ins in fp.program.instructions[first:]:
        ins.source = src
    values = []
    for o in outputs:
        if o is None and isinstance(val, (tuple, list)):
            values.append(None)  # not used by the graph
            continue
        if not isinstance(o, torch.fx.Node):
            raise ExportError(f"{what}: an fp32 island that returns {o!r}")
        values.append(sub.env[o])
    return values if isinstance(val, (tuple, list)) else values[0]
