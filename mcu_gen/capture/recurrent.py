"""nn.GRU and nn.LSTM as one operator each (``mcu::gru``, ``mcu::lstm``), not unrolled.

torch.export captures an ``nn.GRU`` / ``nn.LSTM`` as one ``aten.gru.input`` / ``aten.lstm.input`` node, and core
ATen's decomposition unrolls it: every time step of every layer and direction becomes its own matmuls, adds,
sigmoids and tanhs (a 2-layer GRU over 49 steps: over a thousand instructions, each with its constants and
intermediate tensors). ``recurrent_to_loops`` replaces such a node, before the decomposition, with an mcu op that the
kernels run as one loop over the steps (kernels_portable/op_mcu_gru.cpp, op_mcu_lstm.cpp), the weights read in
place from the program:

- ``mcu::gru(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, bool bidirectional,
  bool batch_first) -> (Tensor output, Tensor h_n, Tensor work)``
- ``mcu::lstm(Tensor input, Tensor h0, Tensor c0, Tensor[] params, bool has_biases, int num_layers,
  bool bidirectional, bool batch_first) -> (Tensor output, Tensor h_n, Tensor c_n, Tensor work)``

``params`` in PyTorch's order (per layer, per direction: weight_ih, weight_hh, then bias_ih, bias_hh when
``has_biases``); ``input`` 3-D (nn.GRU adds the batch dimension of an unbatched input itself). ``work`` is the
kernel's scratch, planned in the arena like any tensor and read by nothing after: the input and hidden parts of one step's
gates (6H floats for the GRU, 8H for the LSTM) and, with more than one layer, one more sequence of
outputs (the layers alternate between it and ``output``). Left unrolled (as before): training-mode nodes (dropout
applies) and LSTMs with ``proj_size``.
"""
from __future__ import annotations

import copy

import torch

GRU_SCHEMA = ("gru(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, bool bidirectional, "
              "bool batch_first) -> (Tensor, Tensor, Tensor)")
GRU_OUT_SCHEMA = ("gru.out(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, "
                  "bool bidirectional, bool batch_first, *, Tensor(a!) out, Tensor(b!) h_n, Tensor(c!) work) "
                  "-> (Tensor(a!), Tensor(b!), Tensor(c!))")
LSTM_SCHEMA = ("lstm(Tensor input, Tensor h0, Tensor c0, Tensor[] params, bool has_biases, int num_layers, "
               "bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor, Tensor)")
LSTM_OUT_SCHEMA = ("lstm.out(Tensor input, Tensor h0, Tensor c0, Tensor[] params, bool has_biases, int num_layers, "
                   "bool bidirectional, bool batch_first, *, Tensor(a!) out, Tensor(b!) h_n, Tensor(c!) c_n, "
                   "Tensor(d!) work) -> (Tensor(a!), Tensor(b!), Tensor(c!), Tensor(d!))")
GATE_WORK = {"gru": 6, "lstm": 8}  # floats of work per hidden unit for one step's gates


def work_numel(kind: str, input_shape, hidden: int, num_layers: int, bidirectional: bool) -> int:
    """Floats of the kernel's work tensor (the kernels check it holds at least this)."""
    steps_by_batch = int(input_shape[0]) * int(input_shape[1])
    directions = 2 if bidirectional else 1
    sequence = steps_by_batch * directions * hidden if num_layers > 1 else 0
    return sequence + GATE_WORK[kind] * hidden


def _out_shape(input, hidden: int, bidirectional: bool) -> list:
    return [int(input.shape[0]), int(input.shape[1]), (2 if bidirectional else 1) * hidden]


def gru_ref(input, hx, params, has_biases, num_layers, bidirectional, batch_first):
    out, h_n = torch.ops.aten.gru.input(input, hx, list(params), has_biases, num_layers, 0.0, False, bidirectional,
                                        batch_first)
    work = input.new_zeros(work_numel("gru", input.shape, hx.shape[-1], num_layers, bidirectional))
    return out, h_n, work


def lstm_ref(input, h0, c0, params, has_biases, num_layers, bidirectional, batch_first):
    out, h_n, c_n = torch.ops.aten.lstm.input(input, [h0, c0], list(params), has_biases, num_layers, 0.0, False,
                                              bidirectional, batch_first)
    work = input.new_zeros(work_numel("lstm", input.shape, h0.shape[-1], num_layers, bidirectional))
    return out, h_n, c_n, work


def _copy_into(results, outs):
    for r, o in zip(results, outs):
        o.resize_(r.shape).copy_(r)
    return tuple(outs)


def _gru_out(input, hx, params, has_biases, num_layers, bidirectional, batch_first, *, out, h_n, work):
    return _copy_into(gru_ref(input, hx, params, has_biases, num_layers, bidirectional, batch_first),
                      (out, h_n, work))


def _lstm_out(input, h0, c0, params, has_biases, num_layers, bidirectional, batch_first, *, out, h_n, c_n, work):
    return _copy_into(lstm_ref(input, h0, c0, params, has_biases, num_layers, bidirectional, batch_first),
                      (out, h_n, c_n, work))


def register(lib) -> None:
    """Defines the ops in ``lib`` (ops.py's library of the mcu namespace)."""
    for schema in (GRU_SCHEMA, GRU_OUT_SCHEMA, LSTM_SCHEMA, LSTM_OUT_SCHEMA):
        lib.define(schema)
    for name, fn in (("gru", gru_ref), ("lstm", lstm_ref), ("gru.out", _gru_out), ("lstm.out", _lstm_out)):
        lib.impl(name, fn, "CompositeExplicitAutograd")

    @torch.library.register_fake("mcu::gru", lib=lib)
    def _gru_fake(input, hx, params, has_biases, num_layers, bidirectional, batch_first):
        hidden = hx.shape[-1]
        return (input.new_empty(_out_shape(input, hidden, bidirectional)), hx.new_empty(hx.shape),
                input.new_empty([work_numel("gru", input.shape, hidden, num_layers, bidirectional)]))

    @torch.library.register_fake("mcu::lstm", lib=lib)
    def _lstm_fake(input, h0, c0, params, has_biases, num_layers, bidirectional, batch_first):
        hidden = h0.shape[-1]
        return (input.new_empty(_out_shape(input, hidden, bidirectional)), h0.new_empty(h0.shape),
                c0.new_empty(c0.shape),
                input.new_empty([work_numel("lstm", input.shape, hidden, num_layers, bidirectional)]))


def _loop_args(node) -> tuple | None:
    """(kind, the mcu op's args) for an aten.gru.input / aten.lstm.input node the kernels run, else None."""
    aten = torch.ops.aten
    if node.op != "call_function" or node.target not in (aten.gru.input, aten.lstm.input) or node.kwargs:
        return None
    input, hx, params, has_biases, num_layers, _dropout, train, bidirectional, batch_first = node.args
    per_direction = 4 if has_biases else 2
    if train or len(params) != num_layers * (2 if bidirectional else 1) * per_direction:
        return None  # dropout between layers applies, or an LSTM's proj_size (a fifth weight per direction)
    val = input.meta.get("val") if hasattr(input, "meta") else None
    if val is None or val.dim() != 3 or val.dtype != torch.float32:
        return None
    rest = (list(params), bool(has_biases), int(num_layers), bool(bidirectional), bool(batch_first))
    if node.target is aten.gru.input:
        return "gru", (input, hx, *rest)
    h0, c0 = hx
    return "lstm", (input, h0, c0, *rest)


def with_recurrent_loops(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``ep`` itself when it has no node ``recurrent_to_loops`` replaces, else a copy with them replaced (the
    caller's program, an ExportedProgram a user passed, stays as it was)."""
    if not any(_loop_args(n) is not None for n in ep.graph.nodes):
        return ep
    ep = copy.deepcopy(ep)
    recurrent_to_loops(ep)
    return ep


def recurrent_to_loops(ep: torch.export.ExportedProgram) -> int:
    """Replaces, in place, each aten.gru.input / aten.lstm.input node of the exported (not yet decomposed)
    program that the kernels run with mcu::gru / mcu::lstm; returns how many. The nodes' users take items 0, 1
    (and 2) of the result, which the mcu ops return in the same places."""
    graph = ep.graph_module.graph
    replaced = 0
    for node in list(graph.nodes):
        found = _loop_args(node)
        if found is None:
            continue
        kind, args = found
        op = torch.ops.mcu.gru.default if kind == "gru" else torch.ops.mcu.lstm.default
        with graph.inserting_before(node):
            new = graph.call_function(op, tuple(args))
        new.meta = dict(node.meta)
        vals = node.meta.get("val")
        if vals is not None:
            hidden = vals[1].shape[-1]
            fake = args[0].meta["val"]
            work = fake.new_empty([work_numel(kind, fake.shape, hidden, args[-3], args[-2])])
            new.meta["val"] = (*vals, work)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        replaced += 1
    if replaced:
        graph.lint()
        ep.graph_module.recompile()
    return replaced
