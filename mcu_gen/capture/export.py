"""Capture a model with torch.export and lower it to an IR Program.

    export_model(spec, fuse=True, has_kernel=None) -> mcu_gen.ir.Program

1. torch.export.export(module.eval(), example_inputs).run_decompositions() (core ATen)
2. graph passes (mcu_gen/capture/passes.py): drop no-ops, fold constants and BatchNorm,
   and with ``fuse=True`` rewrite to mcu:: ops with fused activations
3. lowering (mcu_gen/capture/fp32_lowering.py): every op becomes an Instruction calling the op's
   out-variant with ExecuTorch's argument convention; view ops become aliases and cost nothing.

The operator facts and errors (op_name, source_line, ExportError, ...) are in mcu_gen/capture/schema.py;
this module re-exports them for its importers.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.fx
from torch.export.graph_signature import InputKind, OutputKind

from mcu_gen.capture import decompositions
from mcu_gen.capture import ops as _ops  # noqa: F401  (registers torch.ops.mcu)
from mcu_gen.program.ir import Program
from mcu_gen.capture.model_file import ModelSpec
from mcu_gen.capture.recurrent import with_recurrent_loops
from mcu_gen.capture.passes import ConstGraph, run_passes
from mcu_gen.capture.fp32_lowering import Fp32Lowering
# Re-exported: the operator facts and errors most of mcu-gen imports from here.
from mcu_gen.capture.schema import (ExportError, UnsupportedOperatorError, bind_args,  # noqa: F401
                                    find_functional, find_out_variant, is_out_arg, op_name, source_line,
                                    torch_dtype_name, user_file)

aten = torch.ops.aten


# -- capture ------------------------------------------------------------------------------------
# Core-ATen ops whose decomposition would cost arena bytes or passes and that have portable kernels
# (kernels_portable/op_<name>.cpp): kept whole. reflection/replication pads decompose to
# arange + index.Tensor gathers, glu to two slice copies, a sigmoid and a mul; roll to one index_select per
# rolled dim (an intermediate buffer each, and an int64 index constant); tril to where() with a constant
# mask; select_scatter to where() over a full-size expand_copy of src. (triu is not kept: ExecuTorch's
# portable kernels have no triu.out, and its where() costs no arena byte more.)
KEEP_UNDECOMPOSED = ("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
                     "replication_pad2d", "replication_pad3d", "glu", "roll", "tril", "select_scatter")


def decomposition_table():
    table = torch.export.default_decompositions()
    for name in KEEP_UNDECOMPOSED:
        op = getattr(torch.ops.aten, name).default
        if op in table:
            table.pop(op)
    table.update(decompositions.table())  # operators without a kernel that others compute (decompositions.py)
    return table


def to_core_aten(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """The exported program in core ATen, as mcu-gen lowers it (a model's capture and each fp32 island's): nn.GRU /
    nn.LSTM first as one loop each (capture/recurrent.py), then the decomposition with decomposition_table(), then
    without linear algebra's error checks (without_error_checks)."""
    return without_error_checks(with_recurrent_loops(ep).run_decompositions(decomposition_table()))


# Operators torch.linalg calls only to raise on a bad result (a singular matrix for inv / solve, one that is not
# positive-definite for cholesky): torch.export keeps them as effects, threaded through a token input and output.
ERROR_CHECKS = (torch.ops.aten._linalg_check_errors.default,)


def without_error_checks(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``ep`` without ERROR_CHECKS and their effect tokens. A device cannot raise: where PyTorch stops, the program
    computes on (a singular matrix's inverse is inf / NaN; the operators' ``info`` outputs say what the check
    would have)."""
    nodes = list(ep.graph.nodes)
    if not any(n.op == "call_function" and (n.target in ERROR_CHECKS or (len(n.args) > 1 and n.args[1] in ERROR_CHECKS))
               for n in nodes):
        return ep
    from torch.export._remove_effect_tokens_pass import _remove_effect_tokens

    ep = _remove_effect_tokens(ep)
    for n in list(ep.graph.nodes):
        if n.op == "call_function" and n.target in ERROR_CHECKS and not n.users:
            ep.graph.erase_node(n)
    ep.graph_module.recompile()
    return ep


# torch.export warns that nn.RNN/GRU/LSTM's `_flat_weights` "were assigned during export": the module re-reads
# its own parameters into that list on every forward, which changes nothing the export captures.
RNN_FLAT_WEIGHTS_WARNING = r"The tensor attributes (self\S*\._flat_weights\[\d+\](, )?)+ were assigned during export"


def export_module(module: torch.nn.Module, example_inputs: tuple) -> torch.export.ExportedProgram:
    """torch.export.export(module.eval(), example_inputs), without the warning above, and without the partial
    graph torch prints to stderr when the export fails (some hundred lines of generated code; the error says
    what failed and where)."""
    import contextlib
    import io
    import sys
    import warnings

    said = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(said):
            warnings.filterwarnings("ignore", message=RNN_FLAT_WEIGHTS_WARNING)
            return renorm_embedding_tables(torch.export.export(module.eval(), tuple(example_inputs)))
    except Exception as e:
        graph = getattr(e, "partial_fx_graph", None)
        text = said.getvalue().replace(f"{graph}\n", "") if graph else said.getvalue()
        said = io.StringIO(text)
        raise
    finally:
        sys.stderr.write(said.getvalue())


def renorm_embedding_tables(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """nn.Embedding(max_norm=...) renormalizes, in place, the rows each call looks up (embedding_renorm_ on its
    weight: a parameter mutation, which a program in flash cannot do). A renormalized row has a norm under
    max_norm and is not changed again, so the table with every row renormalized once, here, gives every lookup
    of every sequence of calls; the export's copy of the weight is replaced, the model's own is left alone."""
    aten = torch.ops.aten
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    changed = False
    for node in list(ep.graph.nodes):
        if node.op != "call_function" or node.target is not aten.embedding_renorm_.default or node.users:
            continue
        w = node.args[0]
        while isinstance(w, torch.fx.Node) and w.op == "call_function" and w.target in (aten.detach.default,
                                                                                      aten.alias.default):
            w = w.args[0]
        spec = specs.get(w.name) if isinstance(w, torch.fx.Node) and w.op == "placeholder" else None
        if spec is None or spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER) or spec.target not in ep.state_dict:
            continue
        old = ep.state_dict[spec.target]
        table = old.detach().clone()
        with torch.no_grad():
            torch.embedding_renorm_(table, torch.arange(table.shape[0]), float(node.args[2]), float(node.args[3]))
        ep.state_dict[spec.target] = torch.nn.Parameter(table, requires_grad=False) if \
            isinstance(old, torch.nn.Parameter) else table
        ep.graph.erase_node(node)
        changed = True
    if changed:
        ep.graph.eliminate_dead_code()
        ep.graph_module.recompile()
    return ep


def export_failure(e: Exception) -> str:
    """torch.export's error in short: its first paragraph and the user's call that raised it (its text goes on
    with logging flags and links), and for a data-dependent guard what usually causes one."""
    lines = str(e).splitlines()
    head = []
    for line in lines:
        if not line.strip() and head:
            break
        head.append(line)
    k = next((i for i, line in enumerate(lines) if line.startswith("The following call raised this error")), None)
    where = [line for line in lines[k + 1:k + 3] if line.strip()] if k is not None else []
    text = f"{type(e).__name__}: " + "\n".join(head + (["raised at:"] + where if where else []))
    if "data-dependent" in text:
        text += ("\n(a value read from tensor data decides a Python branch or a shape: torch.equal, .item(), "
                 "bool(tensor). nn.Transformer and nn.TransformerDecoder check a mask that way unless given "
                 "tgt_is_causal=True / src_is_causal=True)")
    return text


def capture(spec: ModelSpec) -> torch.export.ExportedProgram:
    where = f"{spec.name} ({spec.path})" if spec.path else spec.name
    ep = spec.exported_program
    if ep is None:
        if spec.module is None:
            raise ExportError(f"{where}: the model spec has neither a module nor an exported program")
        try:
            ep = export_module(spec.module, spec.example_inputs)
        except Exception as e:  # torch.export raises many exception types
            raise ExportError(
                f"{where}: torch.export could not capture the model (mcu-gen needs static shapes and no "
                f"data-dependent control flow):\n{export_failure(e)}"
            ) from e
    try:
        return to_core_aten(ep)
    except Exception as e:
        raise ExportError(f"{where}: decomposition to core ATen failed: {type(e).__name__}: {e}") from e


def to_const_graph(ep: torch.export.ExportedProgram) -> tuple:
    """Turn parameters, buffers and lifted constants into get_attr nodes.
    Returns (ConstGraph, user input placeholders, output kinds, states): a buffer the model
    mutates stays a placeholder (a state tensor), ``states`` maps its placeholder name to
    (buffer name, initial value); ``output kinds`` has, per output of the graph, None for a user
    output or the buffer name a BUFFER_MUTATION output writes."""
    gm = ep.graph_module
    graph = gm.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    first_op = next(n for n in graph.nodes if n.op != "placeholder")
    cg = ConstGraph(gm)
    mutated = set(ep.graph_signature.buffers_to_mutate.values())
    user_inputs, states = [], {}
    for spec in ep.graph_signature.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(node.meta.get("val"), torch.Tensor):
                raise ExportError(f"input {node.name}: only tensor inputs are supported")
            user_inputs.append(node)
            continue
        if spec.kind == InputKind.BUFFER and spec.target in mutated:
            tensor = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
            states[node.name] = (spec.target, tensor.detach().clone())
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            tensor = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            tensor = ep.constants[spec.target]
        else:
            raise ExportError(f"input {node.name}: {spec.kind.name} inputs are not supported")
        new = cg.add_const(tensor, first_op, "p")
        node.replace_all_uses_with(new)
        graph.erase_node(node)
    kinds = []
    for spec in ep.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT:
            kinds.append(None)
        elif spec.kind == OutputKind.BUFFER_MUTATION and spec.target in mutated:
            kinds.append(spec.target)
        else:
            raise ExportError(f"the model mutates {spec.target} ({spec.kind.name}); mcu-gen supports models "
                              f"that mutate registered buffers (state), not {spec.kind.name}")
    cg.cleanup()
    return cg, user_inputs, kinds, states


def export_model(spec: ModelSpec, fuse: bool = True,
                 has_kernel: Optional[Callable[[str], bool]] = None) -> Program:
    """Capture ``spec`` and lower it to an IR Program.

    ``has_kernel(op)`` gets an out-variant name such as ``"aten::relu.out"`` or
    ``"mcu::conv2d.out"`` and says whether the target has a kernel for it."""
    ep = capture(spec)
    cg, user_inputs, kinds, states = to_const_graph(ep)
    run_passes(cg, fuse=fuse)
    out_node = next(n for n in cg.graph.nodes if n.op == "output")
    outs = list(out_node.args[0])  # passes may have replaced output nodes
    user_outputs = [n for n, k in zip(outs, kinds) if k is None]
    mutations = [(k, n) for n, k in zip(outs, kinds) if k is not None]
    if has_kernel is not None and mutations and not has_kernel("aten::clone.out"):
        raise UnsupportedOperatorError("a model with state needs aten::clone.out, which this target lacks")
    program = Fp32Lowering(cg, user_file(spec), has_kernel).lower(user_inputs, user_outputs, states, mutations)
    program.meta["model"] = spec.name
    program.meta["fused"] = fuse
    return program


class _Method(torch.nn.Module):
    """``owner.attr`` as a module's forward, for torch.export (its weights and buffers are owner's,
    named ``owner.<name>`` in the export)."""

    def __init__(self, owner: torch.nn.Module, attr: str):
        super().__init__()
        self.owner = owner
        self.attr = attr

    def forward(self, *args):
        return getattr(self.owner, self.attr)(*args)


def export_methods(spec: ModelSpec, fuse: bool = True,
                   has_kernel: Optional[Callable[[str], bool]] = None) -> Program:
    """Every method of a model file's ``methods(model)`` (docs/methods.md) as one Program: method 0
    is the Program returned, the others are its ``more_methods``. A state tensor is named by its
    buffer's path in the root module in every method, so methods that update the same buffer share it
    (planner.plan_methods puts it at one offset). A spec without methods gives export_model's Program."""
    if not spec.methods:
        return export_model(spec, fuse=fuse, has_kernel=has_kernel)
    programs = []
    for m in spec.methods:
        sub = ModelSpec(_Method(m.owner, m.attr), tuple(m.example_inputs), name=spec.name, path=spec.path)
        try:
            p = export_model(sub, fuse=fuse, has_kernel=has_kernel)
        except ExportError as e:
            raise type(e)(f"method {m.name}: {e}") from None
        prefix = f"{m.path}." if m.path else ""
        names = [prefix + n[len("owner."):] if n.startswith("owner.") else prefix + n for n in p.state_names]
        for i, n in zip(p.states, names):
            p.tensor(i).name = n
        p.state_names = names
        p.name = m.name
        programs.append(p)
    first = programs[0]
    first.more_methods = programs[1:]
    return first
