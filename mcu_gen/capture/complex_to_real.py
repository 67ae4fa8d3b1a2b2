"""Real FFTs whose complex result ends in real values, rewritten to real tensors (issue 24).

mcu-gen's kernels and memory plan hold real tensors only. An audio front end computes
``torch.stft(x, ..., return_complex=True).abs()`` (or ``.pow(2)`` of it, ``view_as_real``, ``angle``):
core ATen's ``_fft_r2c`` gives a complex tensor, some views move it, and a real value comes out. This
pass carries each such complex tensor as a real one with a trailing dimension of 2 (real, imaginary:
``view_as_real``'s layout) and computes the FFT with ``mcu::rfft`` (kernels_portable/op_mcu_rfft.cpp):

    X[k] = scale * sum_n x[n] (cos(2 pi k n / N) - i sin(2 pi k n / N)),  k < N // 2 + 1 when onesided,

scale 1, 1 / sqrt(N) or 1 / N for normalization 0, 1, 2; the twiddle table [N, 2] is computed in float64
and rounded to float32 at build time (8 N bytes of flash). N a power of two runs a radix-2 FFT (N/2
points, then the real split), other N the direct sum. The operation order differs from PyTorch's FFT:
the result is equal within the fp32 tolerance, not bit for bit.

Rewritten only when every complex tensor of the group is made by ``_fft_r2c`` over one dimension or
by the ops in ``_COMPLEX_OPS`` and read only by those ops or by ``_TO_REAL`` ones; anything else (a
complex graph output, a complex product, another FFT) leaves the graph as it is, and the lowering
refuses the complex tensor with its reason and source line.

`cg` is passes.ConstGraph (passes.run_passes runs this pass first).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.fx

from mcu_gen.capture import ops as _ops  # noqa: F401  (registers torch.ops.mcu)

aten = torch.ops.aten

# Complex in, complex out: the same op on the (..., 2) pair tensor, dimension arguments remapped.
_COMPLEX_OPS = {
    aten.permute.default, aten.view.default, aten._unsafe_view.default, aten.reshape.default,
    aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.slice.Tensor, aten.select.int,
    aten.transpose.int, aten.clone.default, aten.alias.default, aten.neg.default,
    aten.mul.Scalar, aten.div.Scalar, aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor,
}
# Complex in, real out.
_TO_REAL = {aten.abs.default, aten.view_as_real.default, aten.angle.default}


def twiddle_table(n: int) -> np.ndarray:
    """[n, 2] float32: (cos(2 pi j / n), -sin(2 pi j / n)), computed in float64 and rounded once; the
    quarter turns exact (sin(pi) is 0, not 1.2e-16: a real input's Nyquist bin then has an imaginary
    part of exactly 0, as in PyTorch, and its angle is pi, not -pi, for a negative real part)."""
    ang = 2.0 * np.pi * np.arange(n) / n
    cos, msin = np.cos(ang), -np.sin(ang)
    j = np.arange(n)
    quarter = (4 * j) % n == 0
    q = (4 * j[quarter]) // n
    cos[quarter] = np.array([1.0, 0.0, -1.0, 0.0])[q]
    msin[quarter] = np.array([0.0, -1.0, 0.0, 1.0])[q]
    return np.stack([cos, msin], axis=-1).astype(np.float32)


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _is_complex(node) -> bool:
    v = _val(node)
    return isinstance(v, torch.Tensor) and v.dtype.is_complex


def _real_operand(a) -> bool:
    """A real number, or a real float tensor (a constant or computed)."""
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return True
    v = _val(a)
    return isinstance(v, torch.Tensor) and v.dtype.is_floating_point


def _fft_ok(node) -> bool:
    x, dims = node.args[0], node.args[1]
    v = _val(x)
    return (len(dims) == 1 and isinstance(v, torch.Tensor) and v.dtype == torch.float32
            and node.args[2] in (0, 1, 2) and v.dim() >= 1)


def _supported(node) -> bool:
    """Whether a complex node's use `node` can run on pair tensors."""
    t = node.target
    if t in _TO_REAL:
        return True
    if t not in _COMPLEX_OPS:
        return False
    if t in (aten.mul.Tensor, aten.div.Tensor):  # complex times a real: both complex is a complex product
        a, b = node.args[0], node.args[1]
        return _is_complex(a) != _is_complex(b) and (t is aten.mul.Tensor or _is_complex(a)) and \
            _real_operand(b if _is_complex(a) else a)
    if t in (aten.add.Tensor, aten.sub.Tensor):
        return all(_is_complex(a) for a in node.args[:2])
    return True


def refusal(cg):
    """None when every complex tensor of the graph can be a pair tensor, else (node, why not)."""
    for n in cg.graph.nodes:
        if n.op == "output":
            bad = [a for a in n.all_input_nodes if _is_complex(a)]
            if bad:
                return bad[0], "a complex output of the model (return view_as_real(z), z.abs() or z.angle())"
            continue
        if not (_is_complex(n) or any(_is_complex(a) for a in n.all_input_nodes)):
            continue
        if n.op != "call_function":
            return n, "a complex model input or constant"
        if n.target is aten._fft_r2c.default:
            if not _fft_ok(n):
                return n, "a real FFT over more than one dimension or of a non-float32 tensor"
            continue
        if not _supported(n):
            return n, (f"{n.target} of a complex tensor has no real form here (a complex product, another FFT "
                       f"or an op outside the supported views, sums, real scalings, abs, angle, view_as_real)")
    return None


def _meta(target, args) -> torch.Tensor:
    """The output of `target` on zero tensors of the arguments' shapes (for the new node's meta)."""
    def concrete(a):
        if isinstance(a, torch.fx.Node):
            v = a.meta["val"]
            return torch.zeros(tuple(v.shape), dtype=v.dtype)
        return a
    args = torch.fx.node.map_aggregate(args, concrete)
    with torch.no_grad():
        return target(*args).contiguous()


class _Rewriter:
    def __init__(self, cg):
        self.cg = cg
        self.pair = {}  # complex node -> its real (..., 2) node

    def call(self, target, args, like):
        return self.cg.call(target, args, like, val=_meta(target, args))

    def dft(self, node):
        x, (dim,), normalization, onesided = node.args
        xv = _val(x)
        nd, d = xv.dim(), dim % xv.dim()
        n = int(xv.shape[d])
        k = n // 2 + 1 if onesided else n
        scale = (1.0, 1.0 / math.sqrt(n), 1.0 / n)[normalization]
        twc = self.cg.add_const(torch.from_numpy(twiddle_table(n)), node, "twiddle")
        last = list(range(nd))
        if d != nd - 1:
            last = [i for i in range(nd) if i != d] + [d]
            x = self.call(aten.permute.default, [x, last], node)
        out = self.call(torch.ops.mcu.rfft.default, [x, twc, k, scale], node)
        if d != nd - 1:  # move the frequency dimension back to `d`, the pair dimension stays last
            back = [0] * nd
            for pos, src in enumerate(last):
                back[src] = pos
            out = self.call(aten.permute.default, [out, back + [nd]], node)
        return out

    def operand(self, a, node):
        """A complex operand's pair node; a real tensor operand broadcast against the pair dimension."""
        if _is_complex(a):
            return self.pair[a]
        if isinstance(a, torch.fx.Node):
            return self.call(aten.unsqueeze.default, [a, -1], node)
        return a

    def complex_op(self, node):
        t, args = node.target, list(node.args)
        src = args[0]
        nd = _val(src).dim() if _is_complex(src) else None
        p = self.pair.get(src)
        if t is aten.permute.default:
            return self.call(t, [p, [i % nd for i in args[1]] + [nd]], node)
        if t in (aten.view.default, aten._unsafe_view.default, aten.reshape.default):
            return self.call(aten.view.default, [p, list(_val(node).shape) + [2]], node)
        if t is aten.unsqueeze.default:
            return self.call(t, [p, args[1] % (nd + 1)], node)
        if t is aten.squeeze.dim:
            return self.call(t, [p, args[1] % nd], node)
        if t is aten.squeeze.dims:
            return self.call(t, [p, [i % nd for i in args[1]]], node)
        if t in (aten.slice.Tensor, aten.select.int):
            return self.call(t, [p, args[1] % nd] + args[2:], node)
        if t is aten.transpose.int:
            return self.call(t, [p, args[1] % nd, args[2] % nd], node)
        if t in (aten.clone.default, aten.alias.default, aten.neg.default):
            return self.call(t, [p], node) if t is aten.neg.default else p
        if t in (aten.mul.Scalar, aten.div.Scalar):
            return self.call(t, [p, args[1]], node)
        if t in (aten.mul.Tensor, aten.div.Tensor):
            return self.call(t, [self.operand(args[0], node), self.operand(args[1], node)], node)
        # add / sub of two complex tensors (alpha, if any, is real)
        return self.call(t, [self.pair[args[0]], self.pair[args[1]]] + args[2:], node)

    def to_real(self, node):
        p = self.pair[node.args[0]]
        if node.target is aten.view_as_real.default:
            return p
        if node.target is aten.abs.default:  # |z| = sqrt(re^2 + im^2)
            sq = self.call(aten.mul.Tensor, [p, p], node)
            s = self.call(aten.sum.dim_IntList, [sq, [-1]], node)
            return self.call(aten.sqrt.default, [s], node)
        re = self.call(aten.select.int, [p, -1, 0], node)  # angle: atan2(im, re)
        im = self.call(aten.select.int, [p, -1, 1], node)
        return self.call(aten.atan2.default, [im, re], node)

    def run(self, ffts):
        for node in list(self.cg.graph.nodes):  # graph order is a topological order
            if node in ffts:
                self.pair[node] = self.dft(node)
                continue
            if node.op != "call_function" or not any(a in self.pair for a in node.all_input_nodes):
                continue
            new = self.to_real(node) if node.target in _TO_REAL else self.complex_op(node)
            if _is_complex(node):
                self.pair[node] = new
            else:
                node.replace_all_uses_with(new)
        # the complex nodes (and the real-valued ones replaced above) are dead now: cleanup removes them


def complex_to_real(cg) -> int:
    """Rewrites the real FFTs (module docstring) when every one of them can be; returns how many."""
    ffts = [n for n in cg.graph.nodes if n.op == "call_function" and n.target is aten._fft_r2c.default]
    if not ffts:
        return 0
    why = refusal(cg)
    if why is not None:
        node, reason = why
        for f in ffts:  # the lowering's refusal of the complex tensor says what stopped the rewrite
            f.meta["mcu_complex_refusal"] = f"{node.name}: {reason}"
        return 0
    _Rewriter(cg).run(set(ffts))
    cg.cleanup()
    return len(ffts)
