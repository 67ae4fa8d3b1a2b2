"""Graph passes on a core-ATen torch.fx graph, run before lowering to the IR.

All passes work on a ``ConstGraph``: the exported graph in which every
parameter, buffer and lifted constant has become a ``get_attr`` node, so a
constant is simply a node for which ``const(node)`` returns a tensor.

Order (see ``run_passes``):
  complex_to_real     real FFTs (stft) whose complex result ends in real values: DFT matrix products
  remove_noops        eval dropout, no-op clone / alias / _to_copy, detach, export's asserts
  fold_constants      any op whose inputs are all constants (e.g. permute(W))
  fold_batch_norm     eval BN into the preceding convolution / addmm / mm
  fuse (optional)     convolution -> mcu::conv2d, addmm/mm/linear -> mcu::linear,
                      max_pool2d_with_indices -> mcu::max_pool2d,
                      relu / hardtanh / clamp -> the producer's out_min/out_max,
                      mcu::conv2d -> 2x2 mcu::max_pool2d -> mcu::conv2d_max_pool2d (fuse_conv_max_pool)
"""
from __future__ import annotations

import math
import operator

import torch
import torch.fx

from mcu_gen.capture import ops as _ops  # noqa: F401  (registers torch.ops.mcu)
from mcu_gen.capture.complex_to_real import complex_to_real

aten = torch.ops.aten
INF = math.inf


# View ops that cost nothing on a contiguous tensor: the output shares the input's bytes.
FREE_VIEWS = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.squeeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.unsqueeze.default,
    aten.alias.default,
    aten.flatten.using_ints,
    aten.view_copy.default,
    aten.squeeze_copy.default,
    aten.squeeze_copy.dim,
    aten.squeeze_copy.dims,
    aten.unsqueeze_copy.default,
    aten.alias_copy.default,
}


class ConstGraph:
    """An fx graph whose constants are get_attr nodes on ``gm``."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.graph = gm.graph
        self._counter = 0

    def const(self, node):
        if isinstance(node, torch.fx.Node) and node.op == "get_attr":
            return getattr(self.gm, node.target)
        return None

    def is_const(self, node) -> bool:
        return self.const(node) is not None

    def add_const(self, tensor: torch.Tensor, before: torch.fx.Node, hint: str = "c") -> torch.fx.Node:
        self._counter += 1
        name = f"_mcu_{hint}_{self._counter}"
        tensor = tensor.detach().contiguous()
        self.gm.register_buffer(name, tensor)
        with self.graph.inserting_before(before):
            node = self.graph.get_attr(name)
        node.meta["val"] = tensor
        return node

    def replace(self, old: torch.fx.Node, new: torch.fx.Node) -> None:
        old.replace_all_uses_with(new)
        self.graph.erase_node(old)

    def call(self, target, args, like: torch.fx.Node, val=None) -> torch.fx.Node:
        """Insert ``target(*args)`` before ``like``, copying its meta (source line)."""
        with self.graph.inserting_before(like):
            node = self.graph.call_function(target, tuple(args))
        node.meta.update({k: v for k, v in like.meta.items() if k != "val"})
        node.meta["val"] = like.meta.get("val") if val is None else val
        return node

    def cleanup(self) -> None:
        self.graph.eliminate_dead_code()
        used = {n.target for n in self.graph.nodes if n.op == "get_attr"}
        for name in [b for b, _ in self.gm.named_buffers(recurse=False) if b not in used]:
            delattr(self.gm, name)
        self.graph.lint()


def call_nodes(graph, *targets):
    return [n for n in graph.nodes if n.op == "call_function" and (not targets or n.target in targets)]


def _plain_addmm(node: torch.fx.Node) -> bool:
    """addmm with beta = alpha = 1 (the linear pattern)."""
    beta = node.args[3] if len(node.args) > 3 else node.kwargs.get("beta", 1)
    alpha = node.args[4] if len(node.args) > 4 else node.kwargs.get("alpha", 1)
    return beta == 1 and alpha == 1


# -- no-ops -------------------------------------------------------------------------------------
def _same_meta(a, b) -> bool:
    va, vb = a.meta.get("val"), b.meta.get("val")
    return (
        isinstance(va, torch.Tensor)
        and isinstance(vb, torch.Tensor)
        and va.dtype == vb.dtype
        and tuple(va.shape) == tuple(vb.shape)
    )


def _is_noop(node: torch.fx.Node) -> bool:
    t = node.target
    if t in (aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default):
        return True
    if t in (aten.dropout.default, aten.feature_dropout.default):
        return not node.args[2]  # train=False
    if t is aten.clone.default:
        fmt = node.kwargs.get("memory_format")
        return fmt in (None, torch.preserve_format, torch.contiguous_format) and _same_meta(node, node.args[0])
    if t is aten._to_copy.default:
        allowed = {"dtype", "device", "layout", "memory_format", "pin_memory", "non_blocking"}
        if set(node.kwargs) - allowed or len(node.args) != 1:
            return False
        fmt = node.kwargs.get("memory_format")
        return fmt in (None, torch.preserve_format, torch.contiguous_format) and _same_meta(node, node.args[0])
    return False


# torch.export's checks (``.to(dtype)`` leaves _assert_tensor_metadata): no value, dropped as ExecuTorch does.
EXPORT_ASSERTS = {aten._assert_tensor_metadata.default, aten._assert_scalar.default, aten._assert_async.msg,
                  aten.sym_constrain_range_for_size.default, aten.sym_constrain_range.default}


def remove_noops(cg: ConstGraph) -> None:
    for node in call_nodes(cg.graph):
        if node.target in EXPORT_ASSERTS and not node.users:
            cg.graph.erase_node(node)
        elif _is_noop(node):
            cg.replace(node, node.args[0])
        elif node.target is aten.native_dropout.default and node.args[2] is False:
            # (out, mask): only the output may be used in eval mode
            for user in list(node.users):
                if user.target is operator.getitem and user.args[1] == 0:
                    cg.replace(user, node.args[0])
    cg.cleanup()


# -- constant folding ---------------------------------------------------------------------------
_NEVER_FOLD = {aten.rand.default, aten.randn.default, aten.randint.default, aten.empty.memory_format}


# Creation ops whose value depends only on their first argument's shape and dtype: folded to a constant
# even when that argument is not one (``buffer.zero_()`` becomes full_like(buffer, 0)).
_SHAPE_ONLY = {torch.ops.aten.full_like.default, torch.ops.aten.zeros_like.default,
               torch.ops.aten.ones_like.default}


def fold_constants(cg: ConstGraph) -> None:
    for node in call_nodes(cg.graph):
        if node.target in _NEVER_FOLD or node.target is operator.getitem:
            continue
        if not isinstance(getattr(node.target, "_schema", None), torch._C.FunctionSchema):
            continue
        if node.target._schema.is_mutable or not isinstance(node.meta.get("val"), torch.Tensor):
            continue
        inputs = node.all_input_nodes
        if node.target in _SHAPE_ONLY and not isinstance(node.args[0], torch.fx.Node):
            continue
        if node.target in _SHAPE_ONLY:  # the value depends on the input's shape only (a reset's zero_())
            like = node.args[0].meta.get("val")
            if not isinstance(like, torch.Tensor) or any(not isinstance(s, int) for s in like.shape):
                continue
            args = (torch.empty(like.shape, dtype=like.dtype),) + tuple(node.args[1:])
            kwargs = dict(node.kwargs)
            with torch.no_grad():
                result = node.target(*args, **kwargs)
            cg.replace(node, cg.add_const(result, node, "fold"))
            continue
        if not all(cg.is_const(n) for n in inputs):
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), cg.const)
        with torch.no_grad():
            result = node.target(*args, **kwargs)
        cg.replace(node, cg.add_const(result, node, "fold"))
    cg.cleanup()


# -- batch-norm folding -------------------------------------------------------------------------
def _bn_scale_shift(cg: ConstGraph, bn: torch.fx.Node):
    _, weight, bias, mean, var, _momentum, eps = bn.args
    mean, var = cg.const(mean), cg.const(var)
    if mean is None or var is None:
        return None
    weight = torch.ones_like(mean) if weight is None else cg.const(weight)
    bias = torch.zeros_like(mean) if bias is None else cg.const(bias)
    if weight is None or bias is None:
        return None
    scale = weight.double() / torch.sqrt(var.double() + eps)
    shift = bias.double() - mean.double() * scale
    return scale, shift


def fold_batch_norm(cg: ConstGraph) -> None:
    for bn in call_nodes(cg.graph, aten._native_batch_norm_legit_no_training.default):
        users = list(bn.users)
        if not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
            continue
        producer = bn.args[0]
        if not isinstance(producer, torch.fx.Node) or len(producer.users) != 1:
            continue
        ss = _bn_scale_shift(cg, bn)
        if ss is None:
            continue
        scale, shift = ss
        folded = _fold_into(cg, producer, scale, shift)
        if folded is None:
            continue
        for u in users:
            cg.replace(u, folded)
        cg.graph.erase_node(bn)
    cg.cleanup()


def _fold_into(cg: ConstGraph, producer: torch.fx.Node, scale, shift):
    """Scale the producer's output channels by ``scale`` and add ``shift``.
    Returns the node now computing the folded result, or None if not foldable."""
    t = producer.target
    if t is aten.convolution.default and not producer.args[6]:  # not transposed
        w, b = cg.const(producer.args[1]), producer.args[2]
        if w is None or (b is not None and not cg.is_const(b)) or scale.numel() != w.shape[0]:
            return None
        b = torch.zeros(w.shape[0], dtype=torch.float64) if b is None else cg.const(b).double()
        new_w = (w.double() * scale.reshape(-1, *([1] * (w.dim() - 1)))).to(w.dtype)
        new_b = (b * scale + shift).to(w.dtype)
        args = list(producer.args)
        args[1] = cg.add_const(new_w, producer, "w")
        args[2] = cg.add_const(new_b, producer, "b")
        producer.args = tuple(args)
        return producer
    if t in (aten.addmm.default, aten.mm.default):
        # addmm(bias, x, W^T) with W^T [in, out] constant; BN over the out features
        bias_node = producer.args[0] if t is aten.addmm.default else None
        mat2 = producer.args[-1]
        wt = cg.const(mat2)
        if wt is None or wt.dim() != 2 or scale.numel() != wt.shape[1]:
            return None
        if t is aten.addmm.default:
            if not _plain_addmm(producer):
                return None
            b = cg.const(bias_node)
            if b is None or b.dim() != 1:
                return None
            b = b.double()
        else:
            b = torch.zeros(wt.shape[1], dtype=torch.float64)
        new_wt = (wt.double() * scale.reshape(1, -1)).to(wt.dtype)
        new_b = (b * scale + shift).to(wt.dtype)
        x = producer.args[-2]
        new = cg.call(
            aten.addmm.default,
            [cg.add_const(new_b, producer, "b"), x, cg.add_const(new_wt, producer, "w")],
            producer,
        )
        cg.replace(producer, new)
        return new
    return None


# -- fusion to mcu:: ops ----------------------------------------------------------------------
def _to_mcu_ops(cg: ConstGraph) -> None:
    for node in call_nodes(cg.graph):
        t = node.target
        if t is aten.convolution.default:
            x, w, b, stride, padding, dilation, transposed, _out_pad, groups = node.args
            val = node.meta.get("val")
            if transposed or len(stride) != 2 or getattr(val, "dtype", torch.float32) != torch.float32:
                continue  # (mcu::conv2d is fp32; an integer convolution stays aten::convolution)
            new = cg.call(torch.ops.mcu.conv2d.default,
                          [x, w, b, list(stride), list(padding), list(dilation), groups, -INF, INF], node)
            cg.replace(node, new)
        elif t in (aten.addmm.default, aten.mm.default):
            if t is aten.addmm.default and not _plain_addmm(node):
                continue
            wt = cg.const(node.args[-1])
            bias = node.args[0] if t is aten.addmm.default else None
            if wt is None or wt.dim() != 2:
                continue
            if bias is not None:
                b = cg.const(bias)
                if b is None or b.dim() != 1:
                    continue
            x = node.args[-2]
            w = cg.add_const(wt.t().contiguous(), node, "w")  # [out, in], the layout the kernel reads
            cg.replace(node, cg.call(torch.ops.mcu.linear.default, [x, w, bias, -INF, INF], node))
        elif t is aten.linear.default:
            x, w = node.args[0], node.args[1]
            bias = node.args[2] if len(node.args) > 2 else None
            if not cg.is_const(w):
                continue
            cg.replace(node, cg.call(torch.ops.mcu.linear.default, [x, w, bias, -INF, INF], node))
        elif t is aten.max_pool2d_with_indices.default:
            users = list(node.users)
            if not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
                continue
            schema_defaults = ([], [0], [1], False)
            args = list(node.args) + list(schema_defaults[len(node.args) - 2:])
            x, kernel, stride, padding, dilation, ceil_mode = args
            kernel = _pair(kernel)
            stride = _pair(stride) if len(stride) else kernel
            val = users[0].meta.get("val") if users else None
            new = cg.call(torch.ops.mcu.max_pool2d.default,
                          [x, kernel, stride, _pair(padding), _pair(dilation), bool(ceil_mode)], node, val=val)
            for u in users:
                cg.replace(u, new)
            cg.graph.erase_node(node)
    cg.cleanup()


def _pair(v):
    v = [int(i) for i in v]
    return v * 2 if len(v) == 1 else v


def _activation_bounds(node: torch.fx.Node):
    """(lo, hi) of a clamping activation with constant bounds, else None."""
    t = node.target
    if t is aten.relu.default:
        return 0.0, INF
    if t is aten.hardtanh.default:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
        return float(lo), float(hi)
    if t is aten.clamp.default:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
        if isinstance(lo, torch.fx.Node) or isinstance(hi, torch.fx.Node):
            return None
        return (-INF if lo is None else float(lo)), (INF if hi is None else float(hi))
    return None


def fuse_activations(cg: ConstGraph) -> None:
    changed = True
    while changed:
        changed = False
        for act in call_nodes(cg.graph, aten.relu.default, aten.hardtanh.default, aten.clamp.default):
            bounds = _activation_bounds(act)
            producer = act.args[0]
            if bounds is None or not isinstance(producer, torch.fx.Node):
                continue
            # an elementwise clamp commutes with a view: look through single-user views
            while producer.target in FREE_VIEWS and len(producer.users) == 1:
                producer = producer.args[0]
            if len(producer.users) != 1:
                continue
            if producer.target not in (torch.ops.mcu.conv2d.default, torch.ops.mcu.linear.default):
                continue
            args = list(producer.args)
            lo, hi = max(args[-2], bounds[0]), min(args[-1], bounds[1])
            if lo > hi:
                continue
            args[-2], args[-1] = lo, hi
            producer.args = tuple(args)
            cg.replace(act, act.args[0])
            changed = True
    cg.cleanup()


def _conv_pool_blocked(conv: torch.fx.Node, cg: ConstGraph) -> bool:
    """Whether mcu::conv2d_max_pool2d's blocked path takes this convolution (kernels_portable/f32_conv_pool.h,
    conv_pool_blocked: 3x3, stride 1, no padding, no dilation, output width >= 4; blocks of 4 output channels
    per group). Its other shapes are computed window by window, slower than the convolution and the pool
    apart: those stay unfused."""
    x, w, _b, stride, padding, dilation, groups = conv.args[:7]
    wt, val = cg.const(w), conv.meta.get("val")
    if wt is None or wt.dim() != 4 or not isinstance(val, torch.Tensor) or val.dim() != 4:
        return False
    if val.dtype != torch.float32 or tuple(wt.shape[2:]) != (3, 3):
        return False
    if list(stride) != [1, 1] or list(padding) != [0, 0] or list(dilation) != [1, 1]:
        return False
    return (wt.shape[0] // groups) % 4 == 0 and val.shape[2] >= 2 and val.shape[3] >= 4


def fuse_conv_max_pool(cg: ConstGraph) -> None:
    """mcu::conv2d (clamp fused) whose only user is a 2x2 / stride 2 mcu::max_pool2d (no padding, dilation
    or ceil_mode) -> mcu::conv2d_max_pool2d: the convolution's output is no longer stored (arena) and the
    pool is no separate pass."""
    for pool in call_nodes(cg.graph, torch.ops.mcu.max_pool2d.default):
        conv, kernel, stride, padding, dilation, ceil_mode = pool.args
        if not (isinstance(conv, torch.fx.Node) and conv.target is torch.ops.mcu.conv2d.default
                and len(conv.users) == 1):
            continue
        if list(kernel) != [2, 2] or list(stride) != [2, 2] or list(padding) != [0, 0] or list(dilation) != [1, 1]:
            continue
        if ceil_mode or not _conv_pool_blocked(conv, cg):
            continue
        new = cg.call(torch.ops.mcu.conv2d_max_pool2d.default, list(conv.args), pool)
        cg.replace(pool, new)
        cg.graph.erase_node(conv)
    cg.cleanup()


def run_passes(cg: ConstGraph, fuse: bool = True) -> ConstGraph:
    complex_to_real(cg)
    remove_noops(cg)
    fold_constants(cg)
    fold_batch_norm(cg)
    fold_constants(cg)
    if fuse:
        _to_mcu_ops(cg)
        fuse_activations(cg)
        fuse_conv_max_pool(cg)
    return cg
