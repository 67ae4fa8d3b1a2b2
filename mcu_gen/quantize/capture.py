"""Capturing a module for int8 quantization: torch.export to an ATen graph that PT2E can annotate,
eval dropout and aliases removed, BatchNorm folded into the conv / linear before it, buffer mutations
(a model's state) turned into inputs and outputs, GRU / LSTM cells split into linears and elementwise
ops; one observer per state after prepare; whether a graph is quantized already.

    gm = capture_for_quantization(module, example_inputs)   # then prepare_pt2e(gm, McuQuantizer())
"""
from __future__ import annotations

import operator

import torch
import torch.fx

from mcu_gen.quantize.quantizer import CONV_OPS, LINEAR_OPS
from mcu_gen.capture.export import export_module
from mcu_gen.capture.schema import UNSUPPORTED_FLOATS

aten = torch.ops.aten


def _remove_eval_noops(gm: torch.fx.GraphModule) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in (aten.dropout.default, aten.feature_dropout.default) and not node.args[2]:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
        elif node.target in (aten.alias.default, aten.detach.default, aten.detach_.default):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)


def _attr(gm, node):
    if isinstance(node, torch.fx.Node) and node.op == "get_attr":
        obj = gm
        for part in node.target.split("."):
            obj = getattr(obj, part)
        return obj
    return None


def _set_attr(gm, before: torch.fx.Node, name: str, tensor: torch.Tensor) -> torch.fx.Node:
    gm.register_buffer(name, tensor.detach().contiguous())
    with gm.graph.inserting_before(before):
        return gm.graph.get_attr(name)


def fold_wide_float_constants(gm: torch.fx.GraphModule) -> int:
    """Computations on constants that involve float64, float16 or bfloat16 (a positional table computed in
    float64 in forward, then cast to float32) become one float32 (or integer) constant, as the fp32 capture's
    constant folding makes them: PT2E quantizes float32 only, and no kernel computes in those dtypes. Only
    such chains: a float32 constant computation (torch.zeros, a mask) stays what the quantizer sees today.
    Returns the number of operators folded."""
    folded = {}  # node -> its value
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(getattr(node.target, "_schema", None), torch._C.FunctionSchema):
            continue
        if node.target._schema.is_mutable or node.target._schema.name.startswith(("aten::rand", "aten::normal",
                                                                                   "aten::bernoulli")):
            continue
        ins = node.all_input_nodes
        if not all(n in folded or n.op == "get_attr" for n in ins):
            continue
        val = node.meta.get("val")
        dtypes = [val.dtype if isinstance(val, torch.Tensor) else None] + [
            v.dtype for n in ins if isinstance(v := n.meta.get("val"), torch.Tensor)]
        if not any(d in UNSUPPORTED_FLOATS for d in dtypes):
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: folded[n] if n in folded else _attr(gm, n))
        with torch.no_grad():
            folded[node] = node.target(*args, **kwargs)
    count = 0
    for node, value in folded.items():
        if value is None and not node.users:  # a check of a folded value (_assert_tensor_metadata): done
            gm.graph.erase_node(node)
            continue
        if not isinstance(value, torch.Tensor) or value.dtype in UNSUPPORTED_FLOATS or \
                all(u in folded for u in node.users):
            continue  # an intermediate of the chain: its users are folded (or it is left and refused later)
        const = _set_attr(gm, node, f"_mcu_folded_{node.name}", value)
        const.meta["val"] = node.meta.get("val")
        node.replace_all_uses_with(const)
        count += 1
    gm.graph.eliminate_dead_code()
    return count


def fold_batch_norm(gm: torch.fx.GraphModule) -> None:
    """Fold eval BatchNorm into the conv2d / linear before it (weights are constants): aten.batch_norm,
    or its functionalized form (a stateful model's graph, _functional_module), the first result of
    aten._native_batch_norm_legit_no_training."""
    count = 0
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function":
            continue
        if bn.target is aten.batch_norm.default:
            x, gamma, beta, mean, var, training, _momentum, eps = bn.args[:8]
            results = [bn]
        elif bn.target is aten._native_batch_norm_legit_no_training.default:
            x, gamma, beta, mean, var, _momentum, eps = bn.args[:7]
            training = False
            results = [u for u in bn.users if u.target is operator.getitem and u.args[1] == 0]
            if any(u.target is not operator.getitem or (u.args[1] != 0 and u.users) for u in bn.users):
                continue  # the batch statistics are used
        else:
            continue
        if training or not isinstance(x, torch.fx.Node) or len(x.users) != 1:
            continue
        if x.op != "call_function" or x.target not in CONV_OPS | LINEAR_OPS:
            continue
        w = _attr(gm, x.args[1])
        b_node = x.args[2] if len(x.args) > 2 else None
        b = _attr(gm, b_node) if b_node is not None else None
        mean_t, var_t = _attr(gm, mean), _attr(gm, var)
        if w is None or mean_t is None or var_t is None or (b_node is not None and b is None):
            continue
        g = torch.ones_like(mean_t) if gamma is None else _attr(gm, gamma)
        bt = torch.zeros_like(mean_t) if beta is None else _attr(gm, beta)
        if g is None or bt is None:
            continue
        scale = g.double() / torch.sqrt(var_t.double() + eps)
        shift = bt.double() - mean_t.double() * scale
        b0 = torch.zeros(w.shape[0], dtype=torch.float64) if b is None else b.double()
        new_w = (w.double() * scale.reshape(-1, *([1] * (w.dim() - 1)))).to(w.dtype)
        new_b = (b0 * scale + shift).to(w.dtype)
        count += 1
        args = list(x.args) + [None] * (3 - len(x.args))
        args[1] = _set_attr(gm, x, f"_mcu_bn_w{count}", new_w)
        args[2] = _set_attr(gm, x, f"_mcu_bn_b{count}", new_b)
        x.args = tuple(args)
        for r in results:
            r.replace_all_uses_with(x)
        for u in [u for u in bn.users if u is not bn]:
            gm.graph.erase_node(u)
        gm.graph.erase_node(bn)
    gm.graph.eliminate_dead_code()
    gm.recompile()


def _mutated_buffers(ep: torch.export.ExportedProgram) -> list:
    """Buffers that forward writes: in the graph before decomposition, an in-place op on a buffer."""
    from torch.export.graph_signature import InputKind

    buffers = {sp.arg.name: sp.target for sp in ep.graph_signature.input_specs if sp.kind == InputKind.BUFFER}
    found = set(ep.graph_signature.buffers_to_mutate.values())
    for n in ep.graph.nodes:
        if (n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable
                and n.args and isinstance(n.args[0], torch.fx.Node) and n.args[0].name in buffers):
            found.add(buffers[n.args[0].name])
    return sorted(found)


class StatefulModelError(ValueError):
    """A model with mutable buffers (state) that cannot be quantized (a mutation mcu-gen does not take)."""


def _functional_module(ep: torch.export.ExportedProgram) -> torch.fx.GraphModule:
    """A stateful model as a pure function for PT2E: ``forward(*user_inputs, *states) ->
    (*user_outputs, *new_states)``. torch.export's functionalization (``run_decompositions({})``,
    which keeps linear, conv1d, gru_cell ... as they are) turns each buffer mutation into an output;
    parameters and the other buffers become get_attr constants. ``gm.meta["mcu_states"]`` lists, per
    state, its buffer name and initial value (the order of the extra inputs and outputs)."""
    from torch.export.graph_signature import InputKind, OutputKind

    ep = ep.run_decompositions({})
    sig = ep.graph_signature
    gm = ep.graph_module
    graph = gm.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    first_op = next(n for n in graph.nodes if n.op != "placeholder")
    mutated = set(sig.buffers_to_mutate.values())
    users, states = [], []
    for k, spec in enumerate(sig.input_specs):
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            users.append(node)
        elif spec.kind == InputKind.BUFFER and spec.target in mutated:
            tensor = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
            states.append((spec.target, node, tensor.detach().clone()))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            tensor = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
            name = f"_mcu_c{k}_" + spec.target.replace(".", "_")
            gm.register_buffer(name, tensor.detach().clone())
            with graph.inserting_before(first_op):
                attr = graph.get_attr(name)
            attr.meta.update(node.meta)
            node.replace_all_uses_with(attr)
            graph.erase_node(node)
        else:
            raise StatefulModelError(f"input {node.name}: {spec.kind.name} inputs are not supported")
    last = users[-1] if users else None
    for _, node, _ in states:  # the states after the user inputs
        if last is not None:
            last.append(node)
        last = node
    out = next(n for n in graph.nodes if n.op == "output")
    values = list(out.args[0])
    new_value, user_outputs = {}, []
    for v, spec in zip(values, sig.output_specs):
        if spec.kind == OutputKind.USER_OUTPUT:
            user_outputs.append(v)
        elif spec.kind == OutputKind.BUFFER_MUTATION and spec.target in mutated:
            new_value[spec.target] = v
        else:
            raise StatefulModelError(f"the model mutates {spec.target} ({spec.kind.name}); mcu-gen quantizes "
                                     "models that mutate registered buffers (state), not this")
    out.args = (tuple(user_outputs + [new_value[name] for name, _, _ in states]),)
    graph.lint()
    gm.recompile()
    gm.meta["mcu_states"] = [{"name": name, "init": init, "input": node.name} for name, node, init in states]
    gm.meta["mcu_user_outputs"] = len(user_outputs)
    return gm


# -- GRU / LSTM cells as linears and elementwise ops (what the int8 lowering knows) -------------
def _fake_mode(gm):
    from torch._guards import detect_fake_mode

    return detect_fake_mode([n.meta.get("val") for n in gm.graph.nodes if "val" in n.meta])


def _new_node(gm, mode, target, args):
    """A call_function node for ``target(*args)`` (before the current insert point) with its meta val."""
    node = gm.graph.call_function(target, tuple(args))
    vals = torch.fx.node.map_arg(node.args, lambda n: n.meta["val"])
    with mode:
        node.meta["val"] = target(*vals)
    return node


def _new_attr(gm, mode, name, tensor):
    gm.register_buffer(name, tensor.detach().contiguous().clone())
    node = gm.graph.get_attr(name)
    node.meta["val"] = mode.from_tensor(getattr(gm, name))
    return node


def _gates(gm, mode, prefix, x, w, b, n):
    """[linear(x, w_k, b_k) for the n gates]: the cell's packed weight split per gate, so that each
    gate is an int8 linear of its own (no slicing of an int8 result)."""
    out = []
    for k, (wk, bk) in enumerate(zip(w.chunk(n, 0), b.chunk(n, 0) if b is not None else [None] * n)):
        wn = _new_attr(gm, mode, f"{prefix}_w{k}", wk)
        args = [x, wn] + ([_new_attr(gm, mode, f"{prefix}_b{k}", bk)] if bk is not None else [])
        out.append(_new_node(gm, mode, aten.linear.default, args))
    return out


def decompose_rnn_cells(gm: torch.fx.GraphModule) -> int:
    """aten.gru_cell / aten.lstm_cell as linears per gate, adds, sigmoid / tanh and muls (PyTorch's
    equations), which the int8 lowering runs as int8 linears, adds, muls and lookup tables:

        GRU:  r = σ(W_ir x + b_ir + W_hr h + b_hr)   z = σ(W_iz x + ... )   n = tanh(W_in x + b_in + r (W_hn h + b_hn))
              h' = n + z (h - n)                       (= (1 - z) n + z h)
        LSTM: i, f, o = σ(...), g = tanh(...);   c' = f c + i g;   h' = o tanh(c')
    Returns how many cells it decomposed."""
    count = 0
    mode = None
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (aten.gru_cell.default, aten.lstm_cell.default):
            continue
        mode = mode or _fake_mode(gm)
        if mode is None:  # no fake values (a graph not from torch.export): the cells stay fp32 islands
            return 0
        lstm = node.target is aten.lstm_cell.default
        args = list(node.args) + [None] * (6 - len(node.args))
        x, hx, w_ih, w_hh, b_ih, b_hh = args
        w_ih, w_hh = _attr(gm, w_ih), _attr(gm, w_hh)
        b_ih, b_hh = (_attr(gm, b) if b is not None else None for b in (b_ih, b_hh))
        if w_ih is None or w_hh is None:
            continue  # weights computed at run time: leave the cell to the fp32 island
        count += 1
        prefix = f"_mcu_{'lstm' if lstm else 'gru'}{count}"
        n_gates = 4 if lstm else 3
        h, c = (hx[0], hx[1]) if lstm else (hx, None)
        with gm.graph.inserting_before(node):
            gx = _gates(gm, mode, prefix + "_x", x, w_ih, b_ih, n_gates)
            gh = _gates(gm, mode, prefix + "_h", h, w_hh, b_hh, n_gates)
            new = lambda t, *a: _new_node(gm, mode, t, a)  # noqa: E731
            add, mul, sub = aten.add.Tensor, aten.mul.Tensor, aten.sub.Tensor
            if lstm:
                i, f, g, o = (new(aten.tanh.default if k == 2 else aten.sigmoid.default, new(add, gx[k], gh[k]))
                              for k in range(4))
                c_new = new(add, new(mul, f, c), new(mul, i, g))
                h_new = new(mul, o, new(aten.tanh.default, c_new))
                for u in list(node.users):
                    if u.op == "call_function" and u.target is operator.getitem:
                        u.replace_all_uses_with(h_new if u.args[1] == 0 else c_new)
                        gm.graph.erase_node(u)
                if node.users:
                    raise StatefulModelError(f"{node.name}: an lstm_cell result used other than by indexing")
            else:
                r = new(aten.sigmoid.default, new(add, gx[0], gh[0]))
                z = new(aten.sigmoid.default, new(add, gx[1], gh[1]))
                n = new(aten.tanh.default, new(add, gx[2], new(mul, r, gh[2])))
                h_new = new(add, n, new(mul, z, new(sub, h, n)))
                node.replace_all_uses_with(h_new)
        gm.graph.erase_node(node)
    if count:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return count


def _sdpa_arg(node, i: int, name: str, default):
    return node.args[i] if len(node.args) > i else node.kwargs.get(name, default)


def expand_attention(gm: torch.fx.GraphModule) -> int:
    """aten.scaled_dot_product_attention (nn.MultiheadAttention, nn.TransformerEncoderLayer,
    F.scaled_dot_product_attention) without a mask, dropout, causal masking or grouped heads as its equations:

        softmax(q @ k^T * scale) @ v          (scale: the call's, else 1 / sqrt(E))

    which the int8 lowering runs as two quantized_batch_matmul (k^T a view), a table for the scale and the int8
    softmax. PyTorch's own decomposition (a softmax that gives 0 for rows that are all -inf: an equality, two
    logical_not, an any and a where) ran as an fp32 island. Without a mask no row of finite q, k is -inf, so the
    numbers are the same. Returns how many it expanded; the others stay as they were."""
    count = 0
    mode = None
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.scaled_dot_product_attention.default:
            continue
        q, k, v = node.args[:3]
        if (_sdpa_arg(node, 3, "attn_mask", None) is not None or _sdpa_arg(node, 4, "dropout_p", 0.0)
                or _sdpa_arg(node, 5, "is_causal", False) or node.kwargs.get("enable_gqa", False)):
            continue
        mode = mode or _fake_mode(gm)
        if mode is None or "val" not in q.meta:
            return count
        scale = _sdpa_arg(node, 6, "scale", None)
        scale = float(scale) if scale is not None else 1.0 / float(q.meta["val"].shape[-1]) ** 0.5
        with gm.graph.inserting_before(node):
            new = lambda t, *a: _new_node(gm, mode, t, a)  # noqa: E731
            scores = new(aten.mul.Tensor, new(aten.matmul.default, q, new(aten.transpose.int, k, -2, -1)), scale)
            out = new(aten.matmul.default, new(aten.softmax.int, scores, -1), v)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.graph.lint()
        gm.recompile()
    return count


def capture_for_quantization(module: torch.nn.Module, example_inputs: tuple, fold_bn: bool = True
                             ) -> torch.fx.GraphModule:
    """torch.export the model for PT2E (guards off: torch 2.13 adds a _guards_fn call otherwise),
    fold eval BatchNorm, drop eval dropout, split GRU / LSTM cells into linears and elementwise
    ops and attention into its matmuls and softmax (expand_attention). A model with state (buffers that forward writes) becomes a pure function of its inputs and
    states (see _functional_module; ``gm.meta["mcu_states"]``)."""
    ep = export_module(module, example_inputs)
    if _mutated_buffers(ep):
        gm = _functional_module(ep)
    else:
        gm = ep.module(check_guards=False)
    _remove_eval_noops(gm)
    fold_wide_float_constants(gm)
    decompose_rnn_cells(gm)
    expand_attention(gm)
    if fold_bn:
        fold_batch_norm(gm)
    gm.graph.lint()
    gm.recompile()
    return gm


def _is_observer(gm, node) -> bool:
    return node.op == "call_module" and hasattr(getattr(gm, str(node.target), None), "calculate_qparams")


def share_state_observers(prepared: torch.fx.GraphModule, states: list) -> list:
    """One observer per state: the observers on the state input's edges and the one on its new
    value (and every edge that shares one of them) become one, so calibration sees the state's
    range over time and the int8 state keeps one scale and zero point from one step to the next
    (its update is a plain int8 copy). Returns, per state, the observer's name (None: nothing
    observes it, the state stays fp32)."""
    g = prepared.graph
    placeholders = [n for n in g.nodes if n.op == "placeholder"]
    out = next(n for n in g.nodes if n.op == "output")
    results = list(out.args[0])
    n_user = len(results) - len(states)
    by_name = {n.name: n for n in placeholders}
    names = []
    for k, st in enumerate(states):
        p = by_name[st["input"]]
        group = [str(u.target) for u in p.users if _is_observer(prepared, u)]
        upd = results[n_user + k]
        if isinstance(upd, torch.fx.Node) and _is_observer(prepared, upd):
            group.append(str(upd.target))
        elif isinstance(upd, torch.fx.Node):  # an fp32 new value that other readers quantize
            group += [str(u.target) for u in upd.users if _is_observer(prepared, u)]
        if not group:
            names.append(None)
            continue
        keep = group[0]
        for n in g.nodes:
            if _is_observer(prepared, n) and str(n.target) in group:
                n.target = keep
        names.append(keep)
    prepared.recompile()
    return names


def is_quantized_graph(gm: torch.fx.GraphModule) -> bool:
    """True for a graph that already holds quantize/dequantize nodes (a converted PT2E model)."""
    qd = torch.ops.quantized_decomposed
    targets = {qd.quantize_per_tensor.default, qd.dequantize_per_tensor.default,
               qd.dequantize_per_channel.default}
    return any(n.op == "call_function" and n.target in targets for n in gm.graph.nodes)
