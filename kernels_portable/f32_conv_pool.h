// Convolution -> clamp -> 2x2 / stride 2 max pool in one pass
// (mcu::conv2d_max_pool2d; docs/fp32_kernels.md): the convolution's output is never
// stored, only the pooled one.
//
// Per pooled pixel (n, oc, r, c), with v(i, j) the convolution's output at
// row 2r + i, column 2c + j, summed in f32_conv_fast.h's order (bias, then input
// channels, kernel rows and taps ascending; every product and sum rounded):
//     out = clamp1(max_keep_nan(max_keep_nan(v(0,0), v(0,1)), max_keep_nan(v(1,0), v(1,1))), lo, hi)
// max_keep_nan(best, v) = v if v > best or v is NaN, else best (f32_pool.h): a NaN
// in the window gives a NaN, of equal values the first stays. The clamp after the
// maximum (it commutes with it: clamp1 is monotone and keeps NaN; only the sign of
// a zero can differ from clamping first). An odd last row / column of the
// convolution is not computed (the pool's floor).
//
// Paths (the same result from each):
// * 3x3, stride 1, no padding, no dilation, blocks of 4 output channels:
//   - FPU cores without MVE (M33, M4F): conv3x3_pool_rows (f32_conv_fast.h), the
//     3x3 assembly block for rows 2r and 2r + 1, maximum and clamp in registers
//     (a 2-column form for an odd last pooled pixel).
//   - M55: conv3x3_pool_mve, the same with MVE-F (the odd last pooled pixel by a
//     block overlapping the one before).
//   - elsewhere (host, cores without these): rows 2r and 2r + 1 of up to kBandW
//     columns into a stack buffer by the blocked convolution (run_blocks), then
//     pooled from there.
// * anything else (channel tails, other shapes): every window's four values
//   one by one (correct, not fast; mcu_gen/capture/passes.py fuses only the
//   shapes above).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "conv_common.h"
#include "f32_pool.h"

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

namespace mcu::kernels::f32fast {

inline float max2x2_keep_nan(float v00, float v01, float v10, float v11) {
  return max_keep_nan(max_keep_nan(v00, v01), max_keep_nan(v10, v11));
}

// The convolution's output (oc, oh, ow) of one batch item: `in` is the group's
// first input channel, `w` oc's weights; taps outside the input are skipped.
inline float conv_value(const float* in, const float* w, float b, const ConvGeometry& g, int32_t cin_g, int32_t oh,
                        int32_t ow) {
  const int32_t plane = g.in_h * g.in_w;
  float acc = b;
  for (int32_t ic = 0; ic < cin_g; ++ic, in += plane) {
    for (int32_t kh = 0; kh < g.kernel_h; ++kh) {
      const int32_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int32_t kw = 0; kw < g.kernel_w; ++kw) {
        const int32_t iw = ow * g.stride_w - g.pad_w + kw * g.dil_w;
        if (iw < 0 || iw >= g.in_w) continue;
        acc = acc + w[(ic * g.kernel_h + kh) * g.kernel_w + kw] * in[ih * g.in_w + iw];
      }
    }
  }
  return acc;
}

// One output channel, any geometry: window by window.
inline void conv_pool_channel_any(const float* in, const float* w, float b, float* out, const ConvGeometry& g,
                                  int32_t cin_g, float lo, float hi) {
  const int32_t ph = g.out_h / 2, pw = g.out_w / 2;
  for (int32_t r = 0; r < ph; ++r) {
    for (int32_t c = 0; c < pw; ++c) {
      const float v00 = conv_value(in, w, b, g, cin_g, 2 * r, 2 * c);
      const float v01 = conv_value(in, w, b, g, cin_g, 2 * r, 2 * c + 1);
      const float v10 = conv_value(in, w, b, g, cin_g, 2 * r + 1, 2 * c);
      const float v11 = conv_value(in, w, b, g, cin_g, 2 * r + 1, 2 * c + 1);
      *out++ = clamp1(max2x2_keep_nan(v00, v01, v10, v11), lo, hi);
    }
  }
}

// Whether conv_pool_block4 takes the geometry (3x3, stride 1, no padding, no
// dilation: every kernel row and tap of every computed output inside the input).
inline bool conv_pool_blocked(const ConvGeometry& g) {
  return g.kernel_h == 3 && g.kernel_w == 3 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
         g.dil_h == 1 && g.dil_w == 1 && g.out_w >= 4;
}

#if !defined(MCU_F32_CONV_POOL_ASM) && !defined(MCU_F32_CONV_POOL_MVE)
// Columns of the convolution a band (rows 2r and 2r + 1 of 4 channels) holds: 512 bytes of stack.
constexpr int32_t kBandW = 16;
#endif

// Output channels oc .. oc + 3 of one batch item and group (conv_pool_blocked):
// `in` the group's first input channel, `w` oc's weights, `bias` oc's (or null),
// `out` oc's pooled plane.
inline void conv_pool_block4(const float* in, const float* w, const float* bias, float* out, const ConvGeometry& g,
                             int32_t cin_g, float lo, float hi) {
  const int32_t ph = g.out_h / 2, pw = g.out_w / 2;
  const int32_t in_plane = g.in_h * g.in_w;
#if defined(MCU_F32_CONV_POOL_ASM) || defined(MCU_F32_CONV_POOL_MVE)
  static const float kZeros[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  ConvPool3x3Args a;
  a.c.w = w;
  a.c.bias = bias != nullptr ? bias : kZeros;
  a.c.w_oc = cin_g * 9 * 4;
  a.c.out_plane = ph * pw * 4;
  a.c.row_step = g.in_w * 4;
  a.c.ic_adj = (in_plane - 3 * g.in_w) * 4;
  a.c.cin = cin_g;
  a.c.clamp = (lo != -INFINITY ? 1 : 0) | (hi != INFINITY ? 2 : 0);
  a.c.lo = lo;
  a.c.hi = hi;
  for (int32_t r = 0; r < ph; ++r) {
    a.c.x = in + static_cast<size_t>(2 * r) * g.in_w;
    a.c.out = out + static_cast<size_t>(r) * pw;
    a.c.blocks = pw / 2;  // >= 1 (conv_pool_blocked: pw >= 2)
#ifdef MCU_F32_CONV_POOL_ASM
    conv3x3_pool_rows<4>(&a);  // advances a.c.x and a.c.out
    if (pw & 1) {  // the last pooled pixel: the 2-column form
      a.c.blocks = 1;
      conv3x3_pool_rows<2>(&a);
    }
#else
    conv3x3_pool_mve(&a);
    if (pw & 1) {  // the last pooled pixel: a block overlapping the one before (recomputed identically)
      a.c.x = in + static_cast<size_t>(2 * r) * g.in_w + 2 * pw - 4;
      a.c.out = out + static_cast<size_t>(r) * pw + pw - 2;
      a.c.blocks = 1;
      conv3x3_pool_mve(&a);
    }
#endif
  }
#else
  float band[4][2][kBandW];
  Conv c;
  c.in = in;
  c.weight = w;
  c.bias = bias;
  c.out = &band[0][0][0];
  c.cin_g = cin_g;
  c.in_plane = in_plane;
  c.in_w = g.in_w;
  c.out_plane = 2 * kBandW;
  c.out_w = kBandW;
  c.ic_step = in_plane;
  c.row_step = g.in_w;
  c.taps = 9;
  c.kernel_w = 3;
  c.stride_w = 1;
  c.dil_w = 1;
  c.dil_h = 1;
  c.pad_w = 0;
  c.lo = -INFINITY;  // the clamp after the maximum
  c.hi = INFINITY;
  c.exact_tail = false;
  const BlocksFn blocks_fn = &run_blocks<4, 4, RowFixed<4, 4, 3, 1>>;
  const int32_t used = 2 * pw;  // >= 4 (conv_pool_blocked)
  for (int32_t r = 0; r < ph; ++r) {
    for (int32_t c0 = 0; c0 < used;) {
      int32_t wc = used - c0 < kBandW ? used - c0 : kBandW;
      if (used - c0 - wc == 2) wc -= 2;  // no band of 2 columns: every band has whole blocks
      // wc >= 4 and even: whole blocks of 4, a last one overlapping the one before
      // (its pixels are recomputed identically); every input read is inside the row.
      for (int32_t i = 0; i < 2; ++i) {
        const float* x = in + static_cast<size_t>(2 * r + i) * g.in_w + c0;
        float* o = &band[0][i][0];
        blocks_fn(c, o, x, w, 3, wc / 4, 4);
        if (wc % 4 != 0) blocks_fn(c, o + wc - 4, x + wc - 4, w, 3, 1, 4);
      }
      for (int32_t q = 0; q < 4; ++q) {
        float* o = out + static_cast<size_t>(q) * ph * pw + static_cast<size_t>(r) * pw + c0 / 2;
        const float* r0 = band[q][0];
        const float* r1 = band[q][1];
        for (int32_t j = 0; j < wc; j += 2) {
          *o++ = clamp1(max2x2_keep_nan(r0[j], r0[j + 1], r1[j], r1[j + 1]), lo, hi);
        }
      }
      c0 += wc;
    }
  }
#endif
}

// The whole operator (arguments checked by the kernel: out is [N, C, out_h / 2, out_w / 2]).
inline void conv2d_max_pool2x2(const float* in, const float* weight, const float* bias, float* out,
                               const ConvGeometry& g, float lo, float hi) {
  const int32_t cin_g = g.in_channels / g.groups;
  const int32_t cout_g = g.out_channels / g.groups;
  const int32_t taps = g.kernel_h * g.kernel_w;
  const int32_t in_plane = g.in_h * g.in_w;
  const int32_t out_plane = (g.out_h / 2) * (g.out_w / 2);
  const bool blocked = conv_pool_blocked(g);
  for (int32_t n = 0; n < g.batch; ++n) {
    for (int32_t grp = 0; grp < g.groups; ++grp) {
      const float* in_g = in + (static_cast<size_t>(n) * g.in_channels + static_cast<size_t>(grp) * cin_g) * in_plane;
      int32_t oc = grp * cout_g;
      const int32_t oc_end = oc + cout_g;
      float* out_n = out + static_cast<size_t>(n) * g.out_channels * out_plane;
      for (; blocked && oc + 4 <= oc_end; oc += 4) {
        conv_pool_block4(in_g, weight + static_cast<size_t>(oc) * cin_g * taps, bias != nullptr ? bias + oc : nullptr,
                         out_n + static_cast<size_t>(oc) * out_plane, g, cin_g, lo, hi);
      }
      for (; oc < oc_end; ++oc) {
        conv_pool_channel_any(in_g, weight + static_cast<size_t>(oc) * cin_g * taps,
                              bias != nullptr ? bias[oc] : 0.0f, out_n + static_cast<size_t>(oc) * out_plane, g,
                              cin_g, lo, hi);
      }
    }
  }
}

}  // namespace mcu::kernels::f32fast

#pragma GCC pop_options
