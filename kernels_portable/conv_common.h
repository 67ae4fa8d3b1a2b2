// Shared by the fp32 convolution, matrix, pooling and normalisation kernels:
// argument checks and the convolution itself (aten::convolution and
// mcu::conv2d use the same code).
//
// Layout: fp32 tensors are contiguous NCHW; a convolution weight is OIHW
// (IOHW for a transposed convolution, as ATen stores it). 1-D convolutions are
// run as 2-D ones with a height of 1.
//
// The forward convolution is f32_conv_fast.h's register-blocked kernel (its
// header documents the summation order); only the border columns of a row,
// where some tap lies in the padding, check bounds.
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "mcu/kernel.h"

namespace mcu::kernels {

// Largest value accepted for a size, stride, padding or dilation argument;
// keeps every index computation well inside int32.
constexpr int64_t kMaxConvParam = 1 << 20;

inline bool is_f32_contiguous(const TensorRef& t) {
  return t.dtype == DType::Float && t.is_contiguous();
}

// Floor division for a possibly negative numerator (d > 0).
inline int32_t floor_div(int32_t n, int32_t d) {
  int32_t q = n / d;
  return (n % d != 0 && n < 0) ? q - 1 : q;
}

inline int32_t ceil_div(int32_t n, int32_t d) { return -floor_div(-n, d); }

inline int32_t clamp_i32(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Reads entry i of an int[] argument that may hold one value for all spatial
// dims; false if it is missing or outside [lo, kMaxConvParam].
inline bool read_param(const IntList& list, int32_t i, int64_t fallback, int64_t lo, int32_t* value) {
  if (list.size() > 2) return false;
  int64_t v = list.get_or(i, fallback);
  if (v < lo || v > kMaxConvParam) return false;
  *value = static_cast<int32_t>(v);
  return true;
}

// Clamps every element to [lo, hi] (NaN stays NaN); skipped for ±inf bounds.
inline void clamp_f32(float* data, int32_t n, float lo, float hi) {
  if (lo == -INFINITY && hi == INFINITY) return;
  for (int32_t i = 0; i < n; ++i) {
    float v = data[i];
    data[i] = v < lo ? lo : (v > hi ? hi : v);
  }
}

struct ConvGeometry {
  int32_t batch = 0;
  int32_t in_channels = 0, in_h = 0, in_w = 0;
  int32_t out_channels = 0, out_h = 0, out_w = 0;
  int32_t kernel_h = 0, kernel_w = 0;
  int32_t stride_h = 1, stride_w = 1;
  int32_t pad_h = 0, pad_w = 0;
  int32_t dil_h = 1, dil_w = 1;
  int32_t groups = 1;
  bool transposed = false;
};

// The convolution's arguments as the kernels read them from the program.
struct ConvArgs {
  TensorRef input, weight, out;
  const float* bias = nullptr;  // null for None
  IntList stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transposed = false;
};

// Checks shapes and parameters and fills `g`; false if anything is unsupported
// or inconsistent (including an out tensor of the wrong shape; with check_out
// false the caller checks `out`, which then is not the convolution's output).
// Input, weight (and, checked, out) are contiguous tensors of `dtype` (fp32
// unless an integer convolution says otherwise: int_conv.h).
inline bool conv_geometry(const ConvArgs& a, ConvGeometry* g, int32_t bias_numel, bool check_out = true,
                          DType dtype = DType::Float) {
  const TensorRef& in = a.input;
  const TensorRef& w = a.weight;
  const TensorRef& out = a.out;
  if (in.dtype != dtype || w.dtype != dtype || !in.is_contiguous() || !w.is_contiguous()) return false;
  if (check_out && (out.dtype != dtype || !out.is_contiguous())) return false;
  if (in.dim != 3 && in.dim != 4) return false;
  if (w.dim != in.dim || out.dim != in.dim) return false;
  if (a.groups < 1 || a.groups > kMaxConvParam) return false;
  const bool is_1d = in.dim == 3;
  const int32_t spatial = is_1d ? 1 : 2;
  if (a.stride.size() > spatial || a.padding.size() > spatial || a.dilation.size() > spatial) return false;

  g->transposed = a.transposed;
  g->groups = static_cast<int32_t>(a.groups);
  g->batch = in.size(0);
  g->in_channels = in.size(1);
  g->in_h = is_1d ? 1 : in.size(2);
  g->in_w = in.size(in.dim - 1);
  g->kernel_h = is_1d ? 1 : w.size(2);
  g->kernel_w = w.size(w.dim - 1);
  // Height parameters of a 1-D convolution are the identity.
  const int32_t h = is_1d ? -1 : 0;
  const int32_t wi = is_1d ? 0 : 1;
  if (h >= 0) {
    if (!read_param(a.stride, h, 1, 1, &g->stride_h) || !read_param(a.padding, h, 0, 0, &g->pad_h) ||
        !read_param(a.dilation, h, 1, 1, &g->dil_h)) {
      return false;
    }
  }
  if (!read_param(a.stride, wi, 1, 1, &g->stride_w) || !read_param(a.padding, wi, 0, 0, &g->pad_w) ||
      !read_param(a.dilation, wi, 1, 1, &g->dil_w)) {
    return false;
  }
  if (g->batch < 0 || g->in_channels < 1 || g->in_h < 1 || g->in_w < 1 || g->kernel_h < 1 || g->kernel_w < 1) {
    return false;
  }
  if (g->in_channels % g->groups != 0) return false;

  int32_t out_h = 0, out_w = 0;
  const int32_t eff_kh = g->dil_h * (g->kernel_h - 1) + 1;
  const int32_t eff_kw = g->dil_w * (g->kernel_w - 1) + 1;
  if (!a.transposed) {
    // Weight [out_channels, in_channels / groups, kh, kw].
    g->out_channels = w.size(0);
    if (w.size(1) * g->groups != g->in_channels) return false;
    if (g->out_channels < 1 || g->out_channels % g->groups != 0) return false;
    out_h = (g->in_h + 2 * g->pad_h - eff_kh) / g->stride_h + 1;
    out_w = (g->in_w + 2 * g->pad_w - eff_kw) / g->stride_w + 1;
    if (g->in_h + 2 * g->pad_h < eff_kh || g->in_w + 2 * g->pad_w < eff_kw) return false;
  } else {
    // Weight [in_channels, out_channels / groups, kh, kw].
    if (w.size(0) != g->in_channels || w.size(1) < 1) return false;
    g->out_channels = w.size(1) * g->groups;
    if (a.output_padding.size() > spatial) return false;
    int32_t op_h = 0, op_w = 0;
    if (h >= 0 && !read_param(a.output_padding, h, 0, 0, &op_h)) return false;
    if (!read_param(a.output_padding, wi, 0, 0, &op_w)) return false;
    out_h = (g->in_h - 1) * g->stride_h - 2 * g->pad_h + eff_kh + op_h;
    out_w = (g->in_w - 1) * g->stride_w - 2 * g->pad_w + eff_kw + op_w;
  }
  if (out_h < 1 || out_w < 1) return false;
  g->out_h = out_h;
  g->out_w = out_w;
  if (a.bias != nullptr && bias_numel != g->out_channels) return false;
  if (!check_out) return true;
  if (out.size(0) != g->batch || out.size(1) != g->out_channels || out.size(out.dim - 1) != out_w) return false;
  if (!is_1d && out.size(2) != out_h) return false;
  return true;
}

// Output columns [begin, end) whose whole kernel row lies inside the input row.
struct RowSpan {
  int32_t begin;
  int32_t end;
};

inline RowSpan interior_columns(const ConvGeometry& g) {
  int32_t begin = clamp_i32(ceil_div(g.pad_w, g.stride_w), 0, g.out_w);
  int32_t last_start = g.in_w - 1 + g.pad_w - (g.kernel_w - 1) * g.dil_w;
  int32_t end = last_start < 0 ? 0 : clamp_i32(floor_div(last_start, g.stride_w) + 1, 0, g.out_w);
  if (end < begin) end = begin;
  return {begin, end};
}

}  // namespace mcu::kernels

#include "f32_conv_fast.h"

namespace mcu::kernels {

// Forward convolution, clamped to [lo, hi]. Arguments checked by conv_geometry.
// The register-blocked kernel of f32_conv_fast.h (its header states the
// summation order); a 1x1 convolution with unit stride and no padding is one
// long row per plane.
inline void conv2d_f32(const float* in, const float* weight, const float* bias, float* out, ConvGeometry g,
                       float lo, float hi) {
  if (g.kernel_h * g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0) {
    g.in_w = g.out_w = g.in_h * g.in_w;
    g.in_h = g.out_h = 1;
  }
  f32fast::conv2d(in, weight, bias, out, g, lo, hi);
}

// Transposed convolution (scatter form): every input pixel adds its weighted
// kernel into the output, y = mac(y, w, x) in this order (kernel rows, input rows,
// kernel columns, input columns). Weight [in_channels, out_channels / groups, kh, kw].
// The fp32 kernel's mac is y + w * x; int_conv.h's integer one wraps.
template <typename C, class Mac>
inline void conv_transpose2d_scatter(const C* in, const C* weight, const C* bias, C* out, const ConvGeometry& g,
                                     Mac mac) {
  const int32_t cin_g = g.in_channels / g.groups;
  const int32_t cout_g = g.out_channels / g.groups;
  const int32_t in_plane = g.in_h * g.in_w;
  const int32_t out_plane = g.out_h * g.out_w;
  const int32_t taps = g.kernel_h * g.kernel_w;
  for (int32_t n = 0; n < g.batch; ++n) {
    C* out_n = out + static_cast<size_t>(n) * g.out_channels * out_plane;
    for (int32_t oc = 0; oc < g.out_channels; ++oc) {
      const C b = bias != nullptr ? bias[oc] : C(0);
      for (int32_t i = 0; i < out_plane; ++i) out_n[oc * out_plane + i] = b;
    }
    for (int32_t ic = 0; ic < g.in_channels; ++ic) {
      const C* ip = in + (static_cast<size_t>(n) * g.in_channels + ic) * in_plane;
      const int32_t first_oc = (ic / cin_g) * cout_g;
      for (int32_t ocg = 0; ocg < cout_g; ++ocg) {
        C* o = out_n + (first_oc + ocg) * out_plane;
        const C* wk = weight + (static_cast<size_t>(ic) * cout_g + ocg) * taps;
        for (int32_t kh = 0; kh < g.kernel_h; ++kh) {
          for (int32_t ih = 0; ih < g.in_h; ++ih) {
            const int32_t oh = ih * g.stride_h - g.pad_h + kh * g.dil_h;
            if (oh < 0 || oh >= g.out_h) continue;
            C* orow = o + oh * g.out_w;
            const C* irow = ip + ih * g.in_w;
            for (int32_t kw = 0; kw < g.kernel_w; ++kw) {
              const C wv = wk[kh * g.kernel_w + kw];
              const int32_t shift = kw * g.dil_w - g.pad_w;
              // Input columns whose output column ow = iw * stride + shift exists.
              const int32_t iw_begin = clamp_i32(ceil_div(-shift, g.stride_w), 0, g.in_w);
              const int32_t iw_end = clamp_i32(floor_div(g.out_w - 1 - shift, g.stride_w) + 1, 0, g.in_w);
              for (int32_t iw = iw_begin; iw < iw_end; ++iw) {
                C& y = orow[iw * g.stride_w + shift];
                y = mac(y, wv, irow[iw]);
              }
            }
          }
        }
      }
    }
  }
}

inline void conv_transpose2d_f32(const float* in, const float* weight, const float* bias, float* out,
                                 const ConvGeometry& g, float lo, float hi) {
  conv_transpose2d_scatter(in, weight, bias, out, g, [](float y, float w, float x) { return y + w * x; });
  clamp_f32(out, g.batch * g.out_channels * g.out_h * g.out_w, lo, hi);
}

// Checks and runs a convolution; the shared body of both convolution kernels.
// mcu::conv2d is never transposed: run_conv<false> leaves that code out of it.
template <bool kMayBeTransposed = true>
inline Error run_conv(const ConvArgs& a, int32_t bias_numel, float lo, float hi) {
  ConvGeometry g;
  if (!conv_geometry(a, &g, bias_numel)) return Error::KernelFailed;
  if (g.batch == 0) return Error::Ok;
  if (kMayBeTransposed && g.transposed) {
    conv_transpose2d_f32(a.input.f32(), a.weight.f32(), a.bias, a.out.f32(), g, lo, hi);
  } else {
    conv2d_f32(a.input.f32(), a.weight.f32(), a.bias, a.out.f32(), g, lo, hi);
  }
  return Error::Ok;
}

// Reads the optional bias argument `i`; false if present but not fp32 [C].
inline bool read_bias(const KernelContext& ctx, int32_t i, const float** bias, int32_t* numel) {
  *bias = nullptr;
  *numel = 0;
  if (ctx.is_none(i)) return true;
  TensorRef b = ctx.tensor(i);
  if (b.dtype != DType::Float || b.dim != 1) return false;
  *bias = b.f32();
  *numel = b.numel;
  return true;
}

// The arguments of mcu::conv2d and mcu::conv2d_max_pool2d (signature TTtLLLIDDOO: input, weight, bias?,
// stride, padding, dilation, groups, out_min, out_max, out); false on a bad bias or a clamp range with
// out_min > out_max (or NaN).
[[gnu::always_inline]] inline bool read_mcu_conv_args(const KernelContext& ctx, ConvArgs* a, int32_t* bias_numel, float* lo, float* hi) {
  if (!read_bias(ctx, 2, &a->bias, bias_numel)) return false;
  a->input = ctx.tensor(0);
  a->weight = ctx.tensor(1);
  a->stride = ctx.int_list(3);
  a->padding = ctx.int_list(4);
  a->dilation = ctx.int_list(5);
  a->groups = ctx.int_arg(6);
  *lo = static_cast<float>(ctx.double_arg(7));
  *hi = static_cast<float>(ctx.double_arg(8));
  a->out = ctx.tensor(9);
  return *lo <= *hi;
}

}  // namespace mcu::kernels
