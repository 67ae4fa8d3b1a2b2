// int8 pooling of the cortex_m:: operators (quantized_avg_pool2d,
// quantized_max_pool2d and their _nhwc forms). Activations are NHWC in memory
// (read_nhwc in int8_common.h).
//
// Average pool, in integers as CMSIS-NN's arm_avgpool_s8 (so both backends
// give the same bytes; docs/int8.md): over the taps inside the input,
//   sum   = q_0 + q_1 + ...            (raw int8 values, int32)
//   out   = clamp(round_half_away_from_zero(sum / count), -128, 127)
//         = (sum > 0 ? sum + count / 2 : sum - count / 2) / count  (C division)
// Input and output share scale and zero point, so the zero point cancels;
// zero_point, multiplier and shift are checked, not used. ExecuTorch's float
// reference differs from this only on exact ties (it rounds half to even).
//
// Max pool: max over the taps inside the input, clamped to
// [activation_min, activation_max]; input and output zero points must match;
// dilation 1 and ceil_mode false only (as the reference). Kernel 2x2 without
// padding: max_pool_2x2 (four pixels, no clipping); any other window:
// max_window (clipped once per output pixel). Both take 16 channels a vector
// on MVE, 4 a word with SSUB8 + SEL on the DSP extension, one a pass elsewhere.
#pragma once
#include "int8_common.h"
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#include <string.h>
#endif

namespace mcu {
namespace kernels {

constexpr int64_t kMaxPoolParam = 1 << 16;

struct PoolParams {
  int32_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
};

// kernel_size, stride (empty: kernel_size, as ATen) and padding: 1 or 2 values.
inline bool read_pool_params(const IntList& k, const IntList& s, const IntList& p, PoolParams* q) {
  if (k.size() < 1 || k.size() > 2 || s.size() > 2 || p.size() > 2) return false;
  const int64_t kh = k.get_or(0, 1), kw = k.get_or(1, 1);
  const int64_t sh = s.size() == 0 ? kh : s.get_or(0, 1), sw = s.size() == 0 ? kw : s.get_or(1, 1);
  const int64_t ph = p.get_or(0, 0), pw = p.get_or(1, 0);
  if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || ph < 0 || pw < 0) return false;
  if (kh > kMaxPoolParam || kw > kMaxPoolParam || sh > kMaxPoolParam || sw > kMaxPoolParam) return false;
  if (ph > kh / 2 || pw > kw / 2) return false;  // ATen's limit
  *q = {static_cast<int32_t>(kh), static_cast<int32_t>(kw), static_cast<int32_t>(sh),
        static_cast<int32_t>(sw), static_cast<int32_t>(ph), static_cast<int32_t>(pw)};
  return true;
}

// ATen's pooling_output_shape (dilation 1).
inline int32_t pool_out_size(int32_t in, int32_t k, int32_t pad, int32_t stride, bool ceil_mode) {
  const int64_t num = static_cast<int64_t>(in) + 2 * pad - (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  if (num < 0) return 0;
  // 0 <= num < 2^32: a 32-bit division (UDIV) instead of the 64-bit library call
  int64_t out = static_cast<int64_t>(static_cast<uint32_t>(num) / static_cast<uint32_t>(stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= static_cast<int64_t>(in) + pad) --out;
  return static_cast<int32_t>(out);
}

inline bool pool_shapes(const TensorRef& in, const TensorRef& out, bool nhwc, const PoolParams& p, bool ceil_mode,
                        Nhwc* vi, Nhwc* vo) {
  if (!is_int8(in) || !is_int8(out)) return false;
  if (!read_nhwc(in, nhwc, vi) || !read_nhwc(out, nhwc, vo)) return false;
  if (vi->h < 1 || vi->w < 1) return false;
  const int32_t oh = pool_out_size(vi->h, p.kh, p.ph, p.sh, ceil_mode);
  const int32_t ow = pool_out_size(vi->w, p.kw, p.pw, p.sw, ceil_mode);
  return oh >= 1 && ow >= 1 && vo->n == vi->n && vo->c == vi->c && vo->h == oh && vo->w == ow;
}

// Window [begin, end) of output position o, clipped to the input.
inline void pool_window(int32_t o, int32_t stride, int32_t pad, int32_t k, int32_t in, int32_t* begin, int32_t* end) {
  int32_t b = o * stride - pad;
  int32_t e = b + k;
  if (b < 0) b = 0;
  if (e > in) e = in;
  *begin = b;
  *end = e;
}

// CMSIS-NN's rounding of a window average: half away from zero.
inline int32_t avg_round(int32_t sum, int32_t count) {
  const int32_t half = count / 2;
  return (sum > 0 ? sum + half : sum - half) / count;
}

// quantized_avg_pool2d(_nhwc): input T, kernel L, stride L, padding L,
// ceil_mode B, zero_point I, multiplier I, shift I, scratch T, out O.
// quantized_avg_pool2d's zero_point, multiplier and shift (arguments 5-7) in the ranges it takes.
inline bool qavg_pool_params_ok(const KernelContext& ctx) {
  const int64_t zero_point = ctx.int_arg(5), multiplier = ctx.int_arg(6), shift = ctx.int_arg(7);
  return zero_point >= -128 && zero_point <= 127 && valid_multiplier(multiplier) && shift >= -200 && shift <= 200;
}

#if defined(__ARM_FEATURE_DSP) && !(defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1))
// The average pool's sums of 4 (kWords 1) or 8 (kWords 2) channels over a run of pixels p, p + step, ...
// (DSP extension): per pixel each word is added into two pairs of 16-bit lanes (SXTAB16 of bytes 0, 2 and
// of bytes 1, 3; with the loop ~6 instructions per pixel and 4 channels, ~4.5 for 8). A lane holds at most
// 255 pixels' sum (|sum| <= 255 * 128 < 2^15), then is added into the int32 sums[0..4 kWords): the same
// integer sums.
inline int32_t lane_lo(uint32_t v) { return static_cast<int16_t>(v & 0xFFFFu); }
inline int32_t lane_hi(uint32_t v) { return static_cast<int16_t>(v >> 16); }

template <int32_t kWords>
[[gnu::always_inline]] inline void avg_run(const int8_t* p, int32_t pixels, size_t step, int32_t* sums) {
  while (pixels > 0) {
    const int32_t run = pixels < 255 ? pixels : 255;
    pixels -= run;
    uint32_t a02 = 0u, a13 = 0u, b02 = 0u, b13 = 0u;
    const int8_t* end = p + static_cast<size_t>(run) * step;
    for (; p != end; p += step) {
      const uint32_t v = load4(p);
      a02 = __sxtab16(a02, v);
      __asm__("sxtab16 %0, %0, %1, ror #8" : "+r"(a13) : "r"(v));
      if (kWords == 2) {
        const uint32_t u = load4(p + 4);
        b02 = __sxtab16(b02, u);
        __asm__("sxtab16 %0, %0, %1, ror #8" : "+r"(b13) : "r"(u));
      }
    }
    sums[0] += lane_lo(a02), sums[1] += lane_lo(a13), sums[2] += lane_hi(a02), sums[3] += lane_hi(a13);
    if (kWords == 2) {
      sums[4] += lane_lo(b02), sums[5] += lane_lo(b13), sums[6] += lane_hi(b02), sums[7] += lane_hi(b13);
    }
  }
}

// One window's sums of 4 kWords channels from `first` (its first pixel's channel): a window of whole
// input rows is one run of contiguous pixels (KWS's and other global pools), any other one run per row.
template <int32_t kWords>
[[gnu::always_inline]] inline void avg_window(const int8_t* first, int32_t rows, int32_t cols, int32_t in_w,
                                              size_t cs, int32_t* sums) {
  if (cols == in_w) {
    avg_run<kWords>(first, rows * cols, cs, sums);
    return;
  }
  for (int32_t r = 0; r < rows; ++r, first += static_cast<size_t>(in_w) * cs) avg_run<kWords>(first, cols, cs, sums);
}
#endif

inline Error qavg_pool2d(const KernelContext& ctx, bool nhwc) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(9);
  PoolParams p;
  if (!read_pool_params(ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), &p)) return Error::KernelFailed;
  const bool ceil_mode = ctx.bool_arg(4);
  if (!qavg_pool_params_ok(ctx)) return Error::KernelFailed;
  Nhwc vi, vo;
  if (!pool_shapes(in, out, nhwc, p, ceil_mode, &vi, &vo)) return Error::KernelFailed;
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  const int32_t c = vi.c;
  for (int32_t n = 0; n < vi.n; ++n) {
    for (int32_t oh = 0; oh < vo.h; ++oh) {
      int32_t h0, h1;
      pool_window(oh, p.sh, p.ph, p.kh, vi.h, &h0, &h1);
      for (int32_t ow = 0; ow < vo.w; ++ow) {
        int32_t w0, w1;
        pool_window(ow, p.sw, p.pw, p.kw, vi.w, &w0, &w1);
        const int32_t count = (h1 - h0) * (w1 - w0);
        int8_t* o = y + ((static_cast<size_t>(n) * vo.h + oh) * vo.w + ow) * c;
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
        // MVE (Cortex-M55): 16 channels at a time. A window of at most 256 pixels sums within int16
        // (256 x -128 = -32768): two int16x8 (VLDRB.S16, predicated past the last channel, VADD), half the
        // vector instructions of int32 sums; larger windows sum in four int32x4 (VLDRB.S32). The same
        // integer sums either way; an output byte is written after its channel's whole window was read.
        for (int32_t c0 = 0; count <= 256 && c0 < c; c0 += 16) {
          const uint32_t left = static_cast<uint32_t>(c - c0);
          const mve_pred16_t p0 = vctp16q(left), p1 = vctp16q(left > 8 ? left - 8 : 0);
          int16x8_t s0 = vdupq_n_s16(0), s1 = s0;
          for (int32_t ih = h0; ih < h1; ++ih) {
            const int8_t* px = x + ((static_cast<size_t>(n) * vi.h + ih) * vi.w + w0) * c + c0;
            for (int32_t iw = w0; iw < w1; ++iw, px += c) {
              s0 = vaddq_s16(s0, vldrbq_z_s16(px, p0));
              s1 = vaddq_s16(s1, vldrbq_z_s16(px + 8, p1));
            }
          }
          int16_t sum[16];
          vst1q_s16(sum, s0);
          vst1q_s16(sum + 8, s1);
          const int32_t cn = left < 16 ? static_cast<int32_t>(left) : 16;
          for (int32_t j = 0; j < cn; ++j) {
            o[c0 + j] = static_cast<int8_t>(count > 0 ? clamp_i32(avg_round(sum[j], count), -128, 127) : 0);
          }
        }
        for (int32_t c0 = 0; count > 256 && c0 < c; c0 += 16) {
          const uint32_t left = static_cast<uint32_t>(c - c0);
          const mve_pred16_t p0 = vctp32q(left), p1 = vctp32q(left > 4 ? left - 4 : 0),
                             p2 = vctp32q(left > 8 ? left - 8 : 0), p3 = vctp32q(left > 12 ? left - 12 : 0);
          int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
          for (int32_t ih = h0; ih < h1; ++ih) {
            const int8_t* px = x + ((static_cast<size_t>(n) * vi.h + ih) * vi.w + w0) * c + c0;
            for (int32_t iw = w0; iw < w1; ++iw, px += c) {
              s0 = vaddq_s32(s0, vldrbq_z_s32(px, p0));
              s1 = vaddq_s32(s1, vldrbq_z_s32(px + 4, p1));
              s2 = vaddq_s32(s2, vldrbq_z_s32(px + 8, p2));
              s3 = vaddq_s32(s3, vldrbq_z_s32(px + 12, p3));
            }
          }
          int32_t sum[16];
          vst1q_s32(sum, s0);
          vst1q_s32(sum + 4, s1);
          vst1q_s32(sum + 8, s2);
          vst1q_s32(sum + 12, s3);
          const int32_t cn = left < 16 ? static_cast<int32_t>(left) : 16;
          for (int32_t j = 0; j < cn; ++j) {
            o[c0 + j] = static_cast<int8_t>(count > 0 ? clamp_i32(avg_round(sum[j], count), -128, 127) : 0);
          }
        }
#else
        int32_t ch = 0;
#if defined(__ARM_FEATURE_DSP)
        // DSP extension (Cortex-M33/M4): 8 channels at a time, then 4 (avg_run).
        const size_t cs = static_cast<size_t>(c);
        const int8_t* first = x + ((static_cast<size_t>(n) * vi.h + h0) * vi.w + w0) * cs;
        while (ch + 4 <= c) {
          int32_t sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          const int32_t group = ch + 8 <= c ? 8 : 4;
          if (group == 8) {
            avg_window<2>(first + ch, h1 - h0, w1 - w0, vi.w, cs, sums);
          } else {
            avg_window<1>(first + ch, h1 - h0, w1 - w0, vi.w, cs, sums);
          }
          for (int32_t j = 0; j < group; ++j) {
            o[ch + j] = static_cast<int8_t>(count > 0 ? clamp_i32(avg_round(sums[j], count), -128, 127) : 0);
          }
          ch += group;
        }
#endif
        for (; ch < c; ++ch) {
          int32_t sum = 0;
          for (int32_t ih = h0; ih < h1; ++ih) {
            for (int32_t iw = w0; iw < w1; ++iw) sum += x[((static_cast<size_t>(n) * vi.h + ih) * vi.w + iw) * c + ch];
          }
          o[ch] = static_cast<int8_t>(count > 0 ? clamp_i32(avg_round(sum, count), -128, 127) : 0);
        }
#endif
      }
    }
  }
  return Error::Ok;
}

// quantized_max_pool2d(_nhwc): input T, kernel L, stride L, padding L,
// dilation L, ceil_mode B, input_zero_point I, output_zero_point I,
// activation_min I, activation_max I, out O.
// quantized_max_pool2d's arguments 4-9 as this kernel (and CMSIS-NN) take them:
// dilation 1, no ceil_mode, equal zero points, an int8 activation range.
inline bool qmax_pool_params_ok(const KernelContext& ctx) {
  const IntList dilation = ctx.int_list(4);
  return dilation.size() <= 2 && dilation.get_or(0, 1) == 1 && dilation.get_or(1, 1) == 1 && !ctx.bool_arg(5) &&
         ctx.int_arg(6) == ctx.int_arg(7) && valid_int8_range(ctx.int_arg(8), ctx.int_arg(9));
}

#if defined(__ARM_FEATURE_DSP) && !(defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1))
// Four int8 lanes of a word: lane-wise max (SSUB8 sets the GE flag of each lane where a >= b,
// SEL takes a's byte there and b's elsewhere) and min.
inline uint32_t max4_s8(uint32_t a, uint32_t b) {
  (void)__ssub8(a, b);
  return __sel(a, b);
}

inline uint32_t min4_s8(uint32_t a, uint32_t b) {
  (void)__ssub8(a, b);
  return __sel(b, a);
}

#endif

// One window of the max pool: the channels [0, c) of the pixels first + r * row_step + col * c
// (r < rows, col < cols, all inside the input), their max clamped to [lo, hi],
// written to o[0, c). Each output byte (each word of 4, each vector of 16) is written only after
// its channels of the whole window were read, so o may be the window's first pixel (in place).
// Inlined into the loop over output pixels (a call per pixel costs ~30 instructions).
[[gnu::always_inline]] inline void max_window(const int8_t* first, int32_t rows, int32_t cols, size_t row_step,
                                              int32_t c, int32_t lo, int32_t hi, int8_t* o) {
  const size_t cs = static_cast<size_t>(c);
  int32_t ch = 0;
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
  // MVE (Cortex-M55): 16 channels a pass (VMAX.S8), the loads and the store predicated past the last channel.
  const int8x16_t vlo = vdupq_n_s8(static_cast<int8_t>(lo)), vhi = vdupq_n_s8(static_cast<int8_t>(hi));
  for (; ch < c; ch += 16) {
    const mve_pred16_t pr = vctp8q(static_cast<uint32_t>(c - ch));
    const int8_t* row = first + ch;
    int8x16_t m = vdupq_n_s8(-128);
    for (int32_t r = 0; r < rows; ++r, row += row_step) {
      const int8_t* px = row;
      for (int32_t col = 0; col < cols; ++col, px += cs) m = vmaxq_s8(m, vldrbq_z_s8(px, pr));
    }
    vstrbq_p_s8(o + ch, vminq_s8(vmaxq_s8(m, vlo), vhi), pr);
  }
#else
#if defined(__ARM_FEATURE_DSP)
  // DSP extension (Cortex-M33/M4): 4 channels a pass, one word per pixel (LDR), max by SSUB8 + SEL
  // (SSUB8 sets each lane's GE flag where a >= b, SEL takes those lanes of a): ~5 instructions per
  // pixel and 4 channels, where the loop below takes ~5 per pixel and channel.
  const bool clamp_lo = lo > -128, clamp_hi = hi < 127;
  const uint32_t lo4 = 0x01010101u * static_cast<uint8_t>(lo), hi4 = 0x01010101u * static_cast<uint8_t>(hi);
  for (; ch + 4 <= c; ch += 4) {
    const int8_t* row = first + ch;
    uint32_t m = 0x80808080u;  // -128 in every lane
    for (int32_t r = 0; r < rows; ++r, row += row_step) {
      const int8_t* px = row;
      for (int32_t col = 0; col < cols; ++col, px += cs) m = max4_s8(m, load4(px));
    }
    if (clamp_lo) m = max4_s8(m, lo4);
    if (clamp_hi) m = min4_s8(m, hi4);
    memcpy(o + ch, &m, 4);
  }
#endif
  // One channel a pass (the channels the paths above leave, all of them on other cores).
  for (; ch < c; ++ch) {
    const int8_t* row = first + ch;
    int32_t m = -128;
    for (int32_t r = 0; r < rows; ++r, row += row_step) {
      const int8_t* px = row;
      for (int32_t col = 0; col < cols; ++col, px += cs) m = *px > m ? *px : m;
    }
    o[ch] = static_cast<int8_t>(clamp_i32(m, lo, hi));
  }
#endif
}

// The output pixels of a 2x2 pool without padding, in raster order: window(a, d, o) with a the window's
// top row (pixels a, a + c), d its bottom row (d, d + c) and o the output pixel, all at channel `ch`.
// Sizes in locals: the int8 stores may alias anything, so fields read through references would be loaded
// again after every store.
struct Grid2x2 {
  int32_t images, out_h, out_w;
  size_t cs, row_step, step_w, step_h, image;
};

template <typename Window>
[[gnu::always_inline]] inline void each_2x2_window(const int8_t* x, int8_t* y, const Grid2x2 g, int32_t ch,
                                                   Window window) {
  int8_t* o = y + ch;
  for (int32_t n = 0; n < g.images; ++n) {
    const int8_t* row = x + static_cast<size_t>(n) * g.image + ch;
    for (int32_t oh = 0; oh < g.out_h; ++oh, row += g.step_h) {
      const int8_t* a = row;
      for (int32_t ow = 0; ow < g.out_w; ++ow, a += g.step_w, o += g.cs) window(a, a + g.row_step, o);
    }
  }
}

// Kernel 2x2 without padding (ceil_mode false; MNIST's and most CNNs' pools): every window is 4 pixels
// inside the input, no clipping and no loops over taps. One pass over the output pixels per group of
// channels (16 a vector on MVE, 4 a word on the DSP extension, then one), so that a group's predicate and
// constants are set up once. In place: an output byte overwrites the input byte of the same pixel and
// channel, which only windows of that channel's pass read, at that pixel or before it (pool_forward), so
// before it is written. kClamp: the activation range is narrower than int8.
template <bool kClamp>
void max_pool_2x2(const int8_t* x, const Nhwc& vi, const Nhwc& vo, const PoolParams& p, int32_t lo, int32_t hi,
                  int8_t* y) {
  const int32_t c = vi.c;
  const size_t cs = static_cast<size_t>(c), row_step = static_cast<size_t>(vi.w) * cs;
  const Grid2x2 g = {vi.n, vo.h, vo.w, cs, row_step, static_cast<size_t>(p.sw) * cs,
                     static_cast<size_t>(p.sh) * row_step, static_cast<size_t>(vi.h) * row_step};
  int32_t ch = 0;
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
  const int8x16_t vlo = vdupq_n_s8(static_cast<int8_t>(lo)), vhi = vdupq_n_s8(static_cast<int8_t>(hi));
  for (; ch < c; ch += 16) {  // 16 channels a pass, predicated past the last channel
    const mve_pred16_t pr = vctp8q(static_cast<uint32_t>(c - ch));
    each_2x2_window(x, y, g, ch, [&](const int8_t* a, const int8_t* d, int8_t* o) {
      int8x16_t m = vmaxq_s8(vmaxq_s8(vldrbq_z_s8(a, pr), vldrbq_z_s8(a + cs, pr)),
                             vmaxq_s8(vldrbq_z_s8(d, pr), vldrbq_z_s8(d + cs, pr)));
      if (kClamp) m = vminq_s8(vmaxq_s8(m, vlo), vhi);
      vstrbq_p_s8(o, m, pr);
    });
  }
#elif defined(__ARM_FEATURE_DSP)
  const uint32_t lo4 = 0x01010101u * static_cast<uint8_t>(lo), hi4 = 0x01010101u * static_cast<uint8_t>(hi);
  for (; ch + 4 <= c; ch += 4) {  // 4 channels a pass: 4 LDR, 3 x (SSUB8, SEL), STR
    each_2x2_window(x, y, g, ch, [&](const int8_t* a, const int8_t* d, int8_t* o) {
      uint32_t m = max4_s8(max4_s8(load4(a), load4(a + cs)), max4_s8(load4(d), load4(d + cs)));
      if (kClamp) m = min4_s8(max4_s8(m, lo4), hi4);
      memcpy(o, &m, 4);
    });
  }
#endif
  for (; ch < c; ++ch) {
    each_2x2_window(x, y, g, ch, [&](const int8_t* a, const int8_t* d, int8_t* o) {
      const int32_t m0 = a[0] > a[cs] ? a[0] : a[cs];
      const int32_t m1 = d[0] > d[cs] ? d[0] : d[cs];
      const int32_t m = m0 > m1 ? m0 : m1;
      *o = static_cast<int8_t>(kClamp ? clamp_i32(m, lo, hi) : m);
    });
  }
}

inline Error qmax_pool2d(const KernelContext& ctx, bool nhwc) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(10);
  PoolParams p;
  if (!read_pool_params(ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), &p)) return Error::KernelFailed;
  if (!qmax_pool_params_ok(ctx)) return Error::KernelFailed;
  const int32_t lo = static_cast<int32_t>(ctx.int_arg(8)), hi = static_cast<int32_t>(ctx.int_arg(9));
  Nhwc vi, vo;
  if (!pool_shapes(in, out, nhwc, p, false, &vi, &vo)) return Error::KernelFailed;
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  // Output pixels in raster order (per group of channels, or all channels a pixel). Each output byte is
  // written only after its channel of the whole window was read, and overwrites only the input byte of
  // its own pixel and channel, which no later window of that channel reads: so the output may overwrite
  // the input where the planner allows it (mcu::quantized_max_pool2d_inplace, rule pool_forward: no
  // output pixel's window starts before that pixel).
  if (p.kh == 2 && p.kw == 2 && p.ph == 0 && p.pw == 0) {  // pool_shapes: (oh * sh + 1, ow * sw + 1) inside
    if (lo > -128 || hi < 127) {
      max_pool_2x2<true>(x, vi, vo, p, lo, hi, y);
    } else {
      max_pool_2x2<false>(x, vi, vo, p, lo, hi, y);
    }
    return Error::Ok;
  }
  // Any window: clipped to the input once (pool_window: at least one tap, as padding <= kernel / 2),
  // so the taps need no bounds checks.
  const int32_t c = vi.c;
  const size_t row_step = static_cast<size_t>(vi.w) * c;
  for (int32_t n = 0; n < vi.n; ++n) {
    const int8_t* xn = x + static_cast<size_t>(n) * vi.h * row_step;
    for (int32_t oh = 0; oh < vo.h; ++oh) {
      int32_t h0, h1;
      pool_window(oh, p.sh, p.ph, p.kh, vi.h, &h0, &h1);
      const int8_t* xr = xn + static_cast<size_t>(h0) * row_step;
      for (int32_t ow = 0; ow < vo.w; ++ow, y += c) {
        int32_t w0, w1;
        pool_window(ow, p.sw, p.pw, p.kw, vi.w, &w0, &w1);
        max_window(xr + static_cast<size_t>(w0) * c, h1 - h0, w1 - w0, row_step, c, lo, hi, y);
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
