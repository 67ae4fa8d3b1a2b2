// int8 convolutions of the cortex_m:: operators (quantized_conv2d,
// quantized_depthwise_conv2d, quantized_transpose_conv2d and their _nhwc
// forms), shared by the op_cortex_m_*.cpp files.
//
// Layouts (as ExecuTorch's cortex_m lowering stores them):
//   activations  NHWC in memory (see read_nhwc in int8_common.h)
//   conv weight  OHWI  [Cout, KH, KW, Cin / groups]
//   depthwise    IHWO  [1, KH, KW, Cout], Cout = Cin * depth_multiplier
//   transpose    OHWI  [Cout, KH, KW, Cin] (groups 1)
//   bias         int32 [Cout] or None
//   requantize_multipliers / requantize_shifts: int32 [Cout]
// acc = bias + sum((x + input_offset) * w), then per channel
// out = clamp(requantize(acc, m[c], s[c]) + output_offset, act_min, act_max).
//
// The inner loops run over contiguous int8: for a regular convolution with
// dilation 1 the whole kernel row of a window (KW * Cin values) is one run of
// input and one run of weights; windows at the border are clipped to the taps
// inside the input. The scratch tensors are accepted and not used.
#pragma once
#include "int8_common.h"

namespace mcu {
namespace kernels {

// Bounds that keep every index and every accumulator inside int32:
// |x + input_offset| <= 384 and |w| <= 128, so at most kMaxTaps products.
constexpr int64_t kMaxConvSize = 1 << 16;
constexpr int64_t kMaxInputOffset = 256;
constexpr int64_t kMaxTaps = 43690;  // 2^31 / (384 * 128)

inline int32_t floor_div_i32(int32_t n, int32_t d) {
  int32_t q = n / d;
  return (n % d != 0 && n < 0) ? q - 1 : q;
}

inline int32_t ceil_div_i32(int32_t n, int32_t d) { return -floor_div_i32(-n, d); }

// sum((in[i] + offset) * w[i]) over n contiguous values.
inline int32_t dot_offset(const int8_t* in, const int8_t* w, int32_t n, int32_t offset) {
  int32_t acc = 0;
  for (int32_t i = 0; i < n; ++i) acc += (static_cast<int32_t>(in[i]) + offset) * static_cast<int32_t>(w[i]);
  return acc;
}

struct QConvArgs {
  TensorRef input, weight, multipliers, shifts, out;
  const int32_t* bias = nullptr;
  int32_t bias_numel = 0;
  IntList stride, padding, dilation, output_padding;
  int64_t input_offset = 0, output_offset = 0, act_min = -128, act_max = 127;
  int64_t depth_multiplier = 1;
  bool nhwc_logical = false;
};

struct QConvGeometry {
  Nhwc in, out;
  int32_t kh = 0, kw = 0;
  int32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int32_t out_pad_h = 0, out_pad_w = 0;
  int32_t groups = 1;
};

// Reads an optional int32 bias (argument i).
inline bool read_int32_bias(const KernelContext& ctx, int32_t i, QConvArgs* a) {
  if (ctx.is_none(i)) return true;
  const TensorRef b = ctx.tensor(i);
  if (b.dtype != DType::Int32) return false;
  a->bias = b.i32();
  a->bias_numel = b.numel;
  return true;
}

// Entry i of a one- or two-value int[] argument, inside [lo, kMaxConvSize].
inline bool read_pair(const IntList& list, int32_t i, int64_t fallback, int64_t lo, int32_t* value) {
  if (list.size() > 2) return false;
  const int64_t v = list.get_or(i, fallback);
  if (v < lo || v > kMaxConvSize) return false;
  *value = static_cast<int32_t>(v);
  return true;
}

// Common checks; fills the input shape, kernel size and parameters.
inline bool qconv_common(const QConvArgs& a, QConvGeometry* g) {
  if (!is_int8(a.input) || !is_int8(a.weight) || !is_int8(a.out)) return false;
  if (a.weight.dim != 4 || !identity_order(a.weight)) return false;
  if (!read_nhwc(a.input, a.nhwc_logical, &g->in)) return false;
  if (!read_pair(a.stride, 0, 1, 1, &g->stride_h) || !read_pair(a.stride, 1, 1, 1, &g->stride_w)) return false;
  if (!read_pair(a.padding, 0, 0, 0, &g->pad_h) || !read_pair(a.padding, 1, 0, 0, &g->pad_w)) return false;
  if (!read_pair(a.dilation, 0, 1, 1, &g->dil_h) || !read_pair(a.dilation, 1, 1, 1, &g->dil_w)) return false;
  if (a.input_offset < -kMaxInputOffset || a.input_offset > kMaxInputOffset) return false;
  if (a.output_offset < INT32_MIN || a.output_offset > INT32_MAX) return false;
  if (!valid_int8_range(a.act_min, a.act_max)) return false;
  g->kh = a.weight.size(1);
  g->kw = a.weight.size(2);
  if (g->kh < 1 || g->kw < 1 || g->kh > kMaxConvSize || g->kw > kMaxConvSize) return false;
  return g->in.n >= 0 && g->in.h >= 1 && g->in.w >= 1 && g->in.c >= 1;
}

// Output shape check, bias and requantization tensors.
// Shifts must lie in [min_shift, max_shift] (default: what `requantize` takes).
inline bool qconv_finish(const QConvArgs& a, QConvGeometry* g, int32_t out_h, int32_t out_w, int32_t cout,
                         int32_t min_shift = static_cast<int32_t>(kMinShift),
                         int32_t max_shift = static_cast<int32_t>(kMaxShift)) {
  if (out_h < 1 || out_w < 1 || cout < 1) return false;
  if (!read_nhwc(a.out, a.nhwc_logical, &g->out)) return false;
  if (g->out.n != g->in.n || g->out.h != out_h || g->out.w != out_w || g->out.c != cout) return false;
  if (a.bias != nullptr && a.bias_numel != cout) return false;
  return read_requant_tensors(a.multipliers, a.shifts, cout, min_shift, max_shift);
}

// Forward output size; false when the dilated kernel does not fit.
inline bool forward_size(int32_t in, int32_t pad, int32_t k, int32_t dil, int32_t stride, int32_t* out) {
  const int64_t eff = static_cast<int64_t>(dil) * (k - 1) + 1;
  const int64_t span = static_cast<int64_t>(in) + 2 * pad - eff;
  if (span < 0 || span > INT32_MAX) return false;
  *out = static_cast<int32_t>(span) / stride + 1;  // 32-bit division: no library call
  return true;
}

// The forward output size of both spatial dims (into *out_h, *out_w), then
// qconv_finish's checks for `cout` output channels.
inline bool qconv_forward_finish(const QConvArgs& a, QConvGeometry* g, int32_t cout, int32_t* out_h, int32_t* out_w,
                                 int32_t min_shift = static_cast<int32_t>(kMinShift),
                                 int32_t max_shift = static_cast<int32_t>(kMaxShift)) {
  return forward_size(g->in.h, g->pad_h, g->kh, g->dil_h, g->stride_h, out_h) &&
         forward_size(g->in.w, g->pad_w, g->kw, g->dil_w, g->stride_w, out_w) &&
         qconv_finish(a, g, *out_h, *out_w, cout, min_shift, max_shift);
}

// Kernel taps [begin, end) whose input row/column start + k * dil is inside [0, size).
inline void tap_range(int32_t start, int32_t dil, int32_t k, int32_t size, int32_t* begin, int32_t* end) {
  int32_t b = start < 0 ? ceil_div_i32(-start, dil) : 0;
  int32_t e = floor_div_i32(size - 1 - start, dil) + 1;
  if (e > k) e = k;
  if (b > e) b = e;
  *begin = b;
  *end = e;
}

inline int8_t finish_channel(const QConvArgs& a, int32_t acc, int32_t oc) {
  if (a.bias != nullptr) acc = wrap_add(acc, a.bias[oc]);
  return requantize_to_int8(acc, a.multipliers.i32()[oc], a.shifts.i32()[oc], static_cast<int32_t>(a.output_offset),
                            static_cast<int32_t>(a.act_min), static_cast<int32_t>(a.act_max));
}

// quantized_conv2d: weight OHWI [Cout, KH, KW, Cin / groups]. Inlined into its operator (one frame for the
// arguments and the loops: 24 B less stack than a call on the M33).
__attribute__((always_inline)) inline Error qconv2d(const QConvArgs& a) {
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  const int32_t cout = a.weight.size(0);
  const int32_t cin_g = a.weight.size(3);
  if (cin_g < 1 || g.in.c % cin_g != 0) return Error::KernelFailed;
  g.groups = g.in.c / cin_g;
  if (cout % g.groups != 0) return Error::KernelFailed;
  if (static_cast<int64_t>(g.kh) * g.kw * cin_g > kMaxTaps) return Error::KernelFailed;
  int32_t out_h = 0, out_w = 0;
  if (!qconv_forward_finish(a, &g, cout, &out_h, &out_w)) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  const int32_t cout_g = cout / g.groups;
  const int32_t w_per_oc = g.kh * g.kw * cin_g;
  const int32_t row_step = g.dil_h * g.in.w * g.in.c;  // input bytes between kernel rows
  // One contiguous run of (kw_end - kw_begin) * cin_g values per kernel row when taps and channels are adjacent,
  // else kw_end - kw_begin runs of cin_g, dil_w * Cin apart.
  const bool row_runs = g.dil_w == 1 && g.groups == 1;
  for (int32_t n = 0; n < g.in.n; ++n) {
    for (int32_t oh = 0; oh < out_h; ++oh) {
      const int32_t ih0 = oh * g.stride_h - g.pad_h;
      int32_t kh_begin, kh_end;
      tap_range(ih0, g.dil_h, g.kh, g.in.h, &kh_begin, &kh_end);
      for (int32_t ow = 0; ow < out_w; ++ow) {
        const int32_t iw0 = ow * g.stride_w - g.pad_w;
        int32_t kw_begin, kw_end;
        tap_range(iw0, g.dil_w, g.kw, g.in.w, &kw_begin, &kw_end);
        const int32_t taps = kw_end - kw_begin;
        // The window's first tap inside the input (channel 0) and that tap's weights of output channel 0.
        const int8_t* window = in + ((static_cast<size_t>(n) * g.in.h + ih0 + kh_begin * g.dil_h) * g.in.w + iw0 +
                                     kw_begin * g.dil_w) * g.in.c;
        const int8_t* w_first = weight + (static_cast<size_t>(kh_begin) * g.kw + kw_begin) * cin_g;
        int8_t* o = out + ((static_cast<size_t>(n) * out_h + oh) * out_w + ow) * cout;
        for (int32_t oc = 0; oc < cout; ++oc) {
          const int8_t* ip = window + (oc / cout_g) * cin_g;
          const int8_t* wp = w_first + static_cast<size_t>(oc) * w_per_oc;
          int32_t acc = 0;
          for (int32_t kh = kh_begin; kh < kh_end; ++kh, ip += row_step, wp += g.kw * cin_g) {
            if (row_runs) {
              acc += dot_offset(ip, wp, taps * cin_g, off);
            } else {
              for (int32_t t = 0; t < taps; ++t) acc += dot_offset(ip + t * g.dil_w * g.in.c, wp + t * cin_g, cin_g, off);
            }
          }
          o[oc] = finish_channel(a, acc, oc);
        }
      }
    }
  }
  return Error::Ok;
}

// quantized_depthwise_conv2d: weight IHWO [1, KH, KW, Cout]; output channel c
// reads input channel c / depth_multiplier. One channel's accumulator at a time,
// in a register: the kernel's stack stays within its in-place variant's
// (op_mcu_quantized_depthwise_conv2d_inplace.cpp), so a build that runs this
// operator where another runs the variant takes no more stack
// (tests/test_kernel_stack.py).
__attribute__((always_inline)) inline Error qdepthwise_conv2d(const QConvArgs& a) {
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  if (a.weight.size(0) != 1) return Error::KernelFailed;
  const int32_t cout = a.weight.size(3);
  if (a.depth_multiplier < 1 || a.depth_multiplier > kMaxConvSize) return Error::KernelFailed;
  const int32_t dm = static_cast<int32_t>(a.depth_multiplier);
  if (static_cast<int64_t>(g.in.c) * dm != cout) return Error::KernelFailed;
  if (static_cast<int64_t>(g.kh) * g.kw > kMaxTaps) return Error::KernelFailed;
  int32_t out_h = 0, out_w = 0;
  if (!qconv_forward_finish(a, &g, cout, &out_h, &out_w)) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  const int32_t row_step = g.dil_h * g.in.w * g.in.c;  // input bytes between kernel rows
  const int32_t tap_step = g.dil_w * g.in.c;           // input bytes between kernel columns
  for (int32_t n = 0; n < g.in.n; ++n) {
    for (int32_t oh = 0; oh < out_h; ++oh) {
      const int32_t ih0 = oh * g.stride_h - g.pad_h;
      int32_t kh_begin, kh_end;
      tap_range(ih0, g.dil_h, g.kh, g.in.h, &kh_begin, &kh_end);
      for (int32_t ow = 0; ow < out_w; ++ow) {
        const int32_t iw0 = ow * g.stride_w - g.pad_w;
        int32_t kw_begin, kw_end;
        tap_range(iw0, g.dil_w, g.kw, g.in.w, &kw_begin, &kw_end);
        // The window's first tap inside the input, channel 0.
        const int8_t* window = in + ((static_cast<size_t>(n) * g.in.h + ih0 + kh_begin * g.dil_h) * g.in.w + iw0 +
                                     kw_begin * g.dil_w) * g.in.c;
        const int8_t* w_first = weight + static_cast<size_t>(kh_begin * g.kw + kw_begin) * cout;
        int8_t* o = out + ((static_cast<size_t>(n) * out_h + oh) * out_w + ow) * cout;
        for (int32_t c = 0; c < cout; ++c) {
          const int8_t* ip = window + (dm == 1 ? c : c / dm);
          const int8_t* wp = w_first + c;
          int32_t acc = 0;
          for (int32_t kh = kh_begin; kh < kh_end; ++kh, ip += row_step, wp += g.kw * cout) {
            for (int32_t kw = 0; kw < kw_end - kw_begin; ++kw) {
              acc += (ip[kw * tap_step] + off) * wp[kw * cout];
            }
          }
          o[c] = finish_channel(a, acc, c);
        }
      }
    }
  }
  return Error::Ok;
}

// quantized_transpose_conv2d (groups 1): weight OHWI [Cout, KH, KW, Cin];
// out[oh, ow, oc] sums every (ih, iw, kh, kw) with oh = ih * stride - pad + kh * dil.
inline Error qtranspose_conv2d(const QConvArgs& a) {
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  const int32_t cout = a.weight.size(0);
  if (a.weight.size(3) != g.in.c) return Error::KernelFailed;  // groups 1 only
  if (!read_pair(a.output_padding, 0, 0, 0, &g.out_pad_h) || !read_pair(a.output_padding, 1, 0, 0, &g.out_pad_w)) {
    return Error::KernelFailed;
  }
  const int64_t taps = static_cast<int64_t>(g.kh) * g.kw * g.in.c;
  if (taps > kMaxTaps) return Error::KernelFailed;
  const int64_t out_h = static_cast<int64_t>(g.in.h - 1) * g.stride_h - 2 * g.pad_h +
                        static_cast<int64_t>(g.dil_h) * (g.kh - 1) + g.out_pad_h + 1;
  const int64_t out_w = static_cast<int64_t>(g.in.w - 1) * g.stride_w - 2 * g.pad_w +
                        static_cast<int64_t>(g.dil_w) * (g.kw - 1) + g.out_pad_w + 1;
  if (out_h < 1 || out_w < 1 || out_h > kMaxConvSize || out_w > kMaxConvSize) return Error::KernelFailed;
  if (!qconv_finish(a, &g, static_cast<int32_t>(out_h), static_cast<int32_t>(out_w), cout)) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  const int32_t cin = g.in.c;
  for (int32_t n = 0; n < g.in.n; ++n) {
    for (int32_t oh = 0; oh < g.out.h; ++oh) {
      for (int32_t ow = 0; ow < g.out.w; ++ow) {
        int8_t* o = out + ((static_cast<size_t>(n) * g.out.h + oh) * g.out.w + ow) * cout;
        for (int32_t oc = 0; oc < cout; ++oc) {
          int32_t acc = 0;
          for (int32_t kh = 0; kh < g.kh; ++kh) {
            const int32_t th = oh + g.pad_h - kh * g.dil_h;  // = ih * stride_h
            if (th < 0 || th % g.stride_h != 0) continue;
            const int32_t ih = th / g.stride_h;
            if (ih >= g.in.h) continue;
            for (int32_t kw = 0; kw < g.kw; ++kw) {
              const int32_t tw = ow + g.pad_w - kw * g.dil_w;
              if (tw < 0 || tw % g.stride_w != 0) continue;
              const int32_t iw = tw / g.stride_w;
              if (iw >= g.in.w) continue;
              const int8_t* ip = in + ((static_cast<size_t>(n) * g.in.h + ih) * g.in.w + iw) * cin;
              const int8_t* wp = weight + ((static_cast<size_t>(oc) * g.kh + kh) * g.kw + kw) * cin;
              acc += dot_offset(ip, wp, cin, off);
            }
          }
          o[oc] = finish_channel(a, acc, oc);
        }
      }
    }
  }
  return Error::Ok;
}

// Reads the arguments shared by quantized_conv2d(_nhwc) and the depthwise form
// (`dw` shifts the trailing arguments by the depth_multiplier).
inline bool read_qconv_args(const KernelContext& ctx, bool dw, bool nhwc, QConvArgs* a) {
  a->nhwc_logical = nhwc;
  a->input = ctx.tensor(0);
  a->weight = ctx.tensor(1);
  if (!read_int32_bias(ctx, 2, a)) return false;
  a->stride = ctx.int_list(3);
  a->padding = ctx.int_list(4);
  a->dilation = ctx.int_list(5);
  int32_t i = 6;
  if (dw) a->depth_multiplier = ctx.int_arg(i++);
  a->input_offset = ctx.int_arg(i++);
  a->output_offset = ctx.int_arg(i++);
  a->multipliers = ctx.tensor(i++);
  a->shifts = ctx.tensor(i++);
  a->act_min = ctx.int_arg(i++);
  a->act_max = ctx.int_arg(i++);
  ++i;  // scratch: accepted, not used
  a->out = ctx.tensor(i);
  return true;
}

inline bool read_qtranspose_conv_args(const KernelContext& ctx, bool nhwc, QConvArgs* a) {
  a->nhwc_logical = nhwc;
  a->input = ctx.tensor(0);
  a->weight = ctx.tensor(1);
  if (!read_int32_bias(ctx, 2, a)) return false;
  a->stride = ctx.int_list(3);
  a->padding = ctx.int_list(4);
  a->output_padding = ctx.int_list(5);
  a->dilation = ctx.int_list(6);
  a->input_offset = ctx.int_arg(7);
  a->output_offset = ctx.int_arg(8);
  a->multipliers = ctx.tensor(9);
  a->shifts = ctx.tensor(10);
  a->act_min = ctx.int_arg(11);
  a->act_max = ctx.int_arg(12);
  a->out = ctx.tensor(15);  // 13 scratch, 14 output_scratch: not used
  return true;
}

}  // namespace kernels
}  // namespace mcu
