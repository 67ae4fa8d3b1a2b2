"""mcu-gen's own operators (namespace ``mcu``), defined with torch.library.

Each op has a functional overload with a real reference implementation built on
torch ops (also traceable under FakeTensor / torch.export) and an ``.out``
overload, whose schema the device kernels implement exactly:

- ``mcu::conv2d``     2-D convolution, then clamp to [out_min, out_max]
- ``mcu::linear``     y = x @ weight.T + bias (weight [out, in]), then clamp
- ``mcu::max_pool2d`` max pooling without the indices output
- ``mcu::rfft``       DFT of a real input along its last dimension as (re, im) pairs [..., n_out, 2],
                      from a build-time twiddle table (capture/complex_to_real.py)
- ``mcu::conv2d_max_pool2d`` ``mcu::conv2d``, then a 2x2 / stride 2 max pool (no padding, floor); the
  convolution's output is never stored (kernels_portable/f32_conv_pool.h)
- ``mcu::gru``, ``mcu::lstm`` an nn.GRU / nn.LSTM as one loop over its steps (capture/recurrent.py)

``out_min`` / ``out_max`` of ``-inf`` / ``inf`` mean "no clamp"; a fused ReLU is
``out_min = 0``, a fused ReLU6 is ``[0, 6]``.

Importing this module registers the ops; it is safe to import more than once.
"""
from __future__ import annotations

import math

import torch

from mcu_gen.capture import recurrent

NAMESPACE = "mcu"

CONV2D_SCHEMA = (
    "conv2d(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, int groups, float out_min, float out_max) -> Tensor"
)
CONV2D_OUT_SCHEMA = (
    "conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, int groups, float out_min, float out_max, *, Tensor(a!) out) -> Tensor(a!)"
)
LINEAR_SCHEMA = "linear(Tensor input, Tensor weight, Tensor? bias, float out_min, float out_max) -> Tensor"
LINEAR_OUT_SCHEMA = (
    "linear.out(Tensor input, Tensor weight, Tensor? bias, float out_min, float out_max, "
    "*, Tensor(a!) out) -> Tensor(a!)"
)
CONV2D_MAX_POOL2D_SCHEMA = (
    "conv2d_max_pool2d(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, int groups, float out_min, float out_max) -> Tensor"
)
CONV2D_MAX_POOL2D_OUT_SCHEMA = (
    "conv2d_max_pool2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, int groups, float out_min, float out_max, *, Tensor(a!) out) -> Tensor(a!)"
)
MAX_POOL2D_SCHEMA = (
    "max_pool2d(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
    "bool ceil_mode) -> Tensor"
)
MAX_POOL2D_OUT_SCHEMA = (
    "max_pool2d.out(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
    "bool ceil_mode, *, Tensor(a!) out) -> Tensor(a!)"
)

RFFT_SCHEMA = "rfft(Tensor self, Tensor twiddle, int n_out, float scale) -> Tensor"
RFFT_OUT_SCHEMA = "rfft.out(Tensor self, Tensor twiddle, int n_out, float scale, *, Tensor(a!) out) -> Tensor(a!)"


def _clamp(y: torch.Tensor, out_min: float, out_max: float) -> torch.Tensor:
    lo = None if math.isinf(out_min) and out_min < 0 else out_min
    hi = None if math.isinf(out_max) and out_max > 0 else out_max
    if lo is None and hi is None:
        return y
    return torch.clamp(y, lo, hi)


def conv2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max):
    y = torch.nn.functional.conv2d(input, weight, bias, list(stride), list(padding), list(dilation), groups)
    return _clamp(y, out_min, out_max)


def linear_ref(input, weight, bias, out_min, out_max):
    return _clamp(torch.nn.functional.linear(input, weight, bias), out_min, out_max)


def conv2d_max_pool2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max):
    y = conv2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max)
    return torch.nn.functional.max_pool2d(y, [2, 2], [2, 2])


def max_pool2d_ref(self, kernel_size, stride, padding, dilation, ceil_mode):
    return torch.nn.functional.max_pool2d(
        self, list(kernel_size), list(stride) or list(kernel_size), list(padding), list(dilation), ceil_mode
    )


def rfft_ref(self, twiddle, n_out, scale):
    spectrum = torch.fft.fft(self.to(torch.float64), dim=-1)[..., :n_out] * scale
    return torch.view_as_real(spectrum).to(torch.float32).contiguous()


def _conv2d_out(input, weight, bias, stride, padding, dilation, groups, out_min, out_max, *, out):
    r = conv2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max)
    out.resize_(r.shape).copy_(r)
    return out


def _linear_out(input, weight, bias, out_min, out_max, *, out):
    r = linear_ref(input, weight, bias, out_min, out_max)
    out.resize_(r.shape).copy_(r)
    return out


def _conv2d_max_pool2d_out(input, weight, bias, stride, padding, dilation, groups, out_min, out_max, *, out):
    r = conv2d_max_pool2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max)
    out.resize_(r.shape).copy_(r)
    return out


def _max_pool2d_out(self, kernel_size, stride, padding, dilation, ceil_mode, *, out):
    r = max_pool2d_ref(self, kernel_size, stride, padding, dilation, ceil_mode)
    out.resize_(r.shape).copy_(r)
    return out


def _rfft_out(self, twiddle, n_out, scale, *, out):
    r = rfft_ref(self, twiddle, n_out, scale)
    out.resize_(r.shape).copy_(r)
    return out


def _register() -> None:
    if hasattr(torch.ops, NAMESPACE) and hasattr(getattr(torch.ops, NAMESPACE), "conv2d"):
        try:
            torch.ops.mcu.conv2d.default  # already registered in this process
            return
        except (AttributeError, RuntimeError):
            pass
    lib = torch.library.Library(NAMESPACE, "DEF")
    _register.lib = lib  # keep the library alive for the life of the process
    for schema in (CONV2D_SCHEMA, CONV2D_OUT_SCHEMA, LINEAR_SCHEMA, LINEAR_OUT_SCHEMA,
                   MAX_POOL2D_SCHEMA, MAX_POOL2D_OUT_SCHEMA, RFFT_SCHEMA, RFFT_OUT_SCHEMA,
                   CONV2D_MAX_POOL2D_SCHEMA, CONV2D_MAX_POOL2D_OUT_SCHEMA):
        lib.define(schema)
    # Functional overloads: composite of torch ops, so they work on every backend
    # (CPU, Meta, FakeTensor) and torch.export can trace them without decomposing.
    for name, fn in (("conv2d", conv2d_ref), ("linear", linear_ref), ("max_pool2d", max_pool2d_ref),
                     ("rfft", rfft_ref), ("conv2d_max_pool2d", conv2d_max_pool2d_ref)):
        lib.impl(name, fn, "CompositeExplicitAutograd")
    for name, fn in (("conv2d.out", _conv2d_out), ("linear.out", _linear_out), ("max_pool2d.out", _max_pool2d_out),
                     ("rfft.out", _rfft_out), ("conv2d_max_pool2d.out", _conv2d_max_pool2d_out)):
        lib.impl(name, fn, "CompositeExplicitAutograd")

    recurrent.register(lib)  # mcu::gru, mcu::lstm (capture/recurrent.py)

    @torch.library.register_fake("mcu::conv2d", lib=lib)
    def _conv2d_fake(input, weight, bias, stride, padding, dilation, groups, out_min, out_max):
        return conv2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max)

    @torch.library.register_fake("mcu::linear", lib=lib)
    def _linear_fake(input, weight, bias, out_min, out_max):
        return linear_ref(input, weight, bias, out_min, out_max)

    @torch.library.register_fake("mcu::conv2d_max_pool2d", lib=lib)
    def _conv2d_max_pool2d_fake(input, weight, bias, stride, padding, dilation, groups, out_min, out_max):
        return conv2d_max_pool2d_ref(input, weight, bias, stride, padding, dilation, groups, out_min, out_max)

    @torch.library.register_fake("mcu::max_pool2d", lib=lib)
    def _max_pool2d_fake(self, kernel_size, stride, padding, dilation, ceil_mode):
        return max_pool2d_ref(self, kernel_size, stride, padding, dilation, ceil_mode)

    @torch.library.register_fake("mcu::rfft", lib=lib)
    def _rfft_fake(self, twiddle, n_out, scale):
        return self.new_empty(tuple(self.shape[:-1]) + (n_out, 2))


_register()
