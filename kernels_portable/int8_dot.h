// Dot products of int8 rows with offsets, shared by the fully connected and batch matmul kernels:
//   dot_rows(x, w, k, rows, a, b, acc): acc[r] = sum over i < k of (x[i] + a) * (w[r * k + i] + b), r < rows <= 4
// in wrapping int32 (exact while k <= kMaxLinearK), one pass over x for up to kRowsPerPass rows:
// MVE (Cortex-M55) 16 products a VMLADAVA.S8; DSP (Cortex-M33/M4) SXTB16 pairs and SMLAD; plain C elsewhere.
#ifndef MCU_KERNELS_INT8_DOT_H
#define MCU_KERNELS_INT8_DOT_H

#include "int8_conv.h"
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#include <string.h>
#endif

namespace mcu {
namespace kernels {

// Longest row for which |(x + 256) * (w + 256)| summed stays inside int32.
constexpr int32_t kMaxLinearK = 14563;

// Both forms as one sum: acc[n] = sum over i of (x[i] + a) * (w[n][i] + b) + c[n], in wrapping int32 with
//   kernel_sum given: a = 0, b = filter_offset, c = kernel_sum
//                     (sum x * w + filter_offset * sum x = sum x * (w + filter_offset))
//   otherwise:        a = input_offset, b = filter_offset, c = bias (or 0)
// The sums of products are exact (kMaxLinearK), so every order of adding them gives the same int32.
constexpr int32_t kRowsPerPass = 4;  // output channels that share one pass over x

// sum over i < k of (x[i] + a) * (w[i] + b): one channel, plain C (other cores, and the tails below).
inline int32_t dot_plain(const int8_t* x, const int8_t* w, int32_t k, int32_t a, int32_t b) {
  int32_t acc = 0;
  for (int32_t i = 0; i < k; ++i) acc += (static_cast<int32_t>(x[i]) + a) * (static_cast<int32_t>(w[i]) + b);
  return acc;
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
// MVE (Cortex-M55): 16 products a VMLADAVA.S8 (loads predicated past k), offsets by the sums:
//   sum (x + a)(w + b) = sum x w + b sum x + a sum w + k a b   (wrapping; the exact sum fits int32)
inline void dot_rows(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
  int32_t sum_x = 0;
  if (b != 0) {
    for (int32_t i = 0; i < k; i += 16) sum_x = vaddvaq_s8(sum_x, vldrbq_z_s8(x + i, vctp8q(static_cast<uint32_t>(k - i))));
  }
  for (int32_t r = 0; r < rows; ++r, w += k) {
    int32_t xw = 0, sum_w = 0;
    for (int32_t i = 0; i < k; i += 16) {
      const mve_pred16_t pr = vctp8q(static_cast<uint32_t>(k - i));
      const int8x16_t wv = vldrbq_z_s8(w + i, pr);
      xw = vmladavaq_s8(xw, vldrbq_z_s8(x + i, pr), wv);
      if (a != 0) sum_w = vaddvaq_s8(sum_w, wv);
    }
    uint32_t s = static_cast<uint32_t>(xw) + static_cast<uint32_t>(b) * static_cast<uint32_t>(sum_x) +
                 static_cast<uint32_t>(a) * static_cast<uint32_t>(sum_w) +
                 static_cast<uint32_t>(k) * static_cast<uint32_t>(a) * static_cast<uint32_t>(b);
    acc[r] = static_cast<int32_t>(s);
  }
}
#elif defined(__ARM_FEATURE_DSP)
// DSP extension (Cortex-M33/M4): per 4 inputs, x and each row's weights as two pairs of int16 (SXTB16 of
// bytes 0, 2 and of bytes 1, 3; SADD16 adds the offsets: |x + a|, |w + b| <= 384), two SMLAD per row: one
// pass over x for up to 4 rows, ~1.6 instructions per MAC (the plain loop: ~9).
inline uint32_t sxtb16_ror8(uint32_t v) {
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}

// 4 int8 of x (or of a weight row) as the int16 pairs (bytes 0, 2) and (bytes 1, 3), plus the offset.
template <bool kOffsets>
inline void widen(uint32_t v, uint32_t offset2, uint32_t* v02, uint32_t* v13) {
  *v02 = __sxtb16(v);
  *v13 = sxtb16_ror8(v);
  if (kOffsets) {
    *v02 = __sadd16(*v02, offset2);
    *v13 = __sadd16(*v13, offset2);
  }
}

// acc + the 4 products of x's pairs with the weights w[0..3] (+ the offset): LDR, 2 SXTB16, 2 SMLAD.
template <bool kOffsets>
inline int32_t mac4(int32_t acc, uint32_t x02, uint32_t x13, const int8_t* w, uint32_t offset2) {
  uint32_t w02, w13;
  widen<kOffsets>(load4(w), offset2, &w02, &w13);
  return __smlad(x13, w13, __smlad(x02, w02, acc));
}

// Not inlined into the kernel: its own registers for the 4 sums, 4 row pointers and x's pairs.
template <bool kOffsets>
[[gnu::noinline]] inline void dot_rows_dsp(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
  const uint32_t aa = 0x00010001u * static_cast<uint16_t>(a), bb = 0x00010001u * static_cast<uint16_t>(b);
  const int32_t k4 = k & ~3;
  int32_t r = 0;
  if (rows == kRowsPerPass) {  // one pass over x for 4 rows
    const int8_t* w1 = w + k;
    const int8_t* w2 = w1 + k;
    const int8_t* w3 = w2 + k;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int32_t i = 0; i < k4; i += 4) {
      uint32_t x02, x13;
      widen<kOffsets>(load4(x + i), aa, &x02, &x13);
      s0 = mac4<kOffsets>(s0, x02, x13, w + i, bb);
      s1 = mac4<kOffsets>(s1, x02, x13, w1 + i, bb);
      s2 = mac4<kOffsets>(s2, x02, x13, w2 + i, bb);
      s3 = mac4<kOffsets>(s3, x02, x13, w3 + i, bb);
    }
    acc[0] = s0, acc[1] = s1, acc[2] = s2, acc[3] = s3;
    r = kRowsPerPass;
  }
  for (; r < rows; ++r) {  // the last rows of a layer, one at a time
    const int8_t* wr = w + static_cast<size_t>(r) * k;
    int32_t s0 = 0;
    for (int32_t i = 0; i < k4; i += 4) {
      uint32_t x02, x13;
      widen<kOffsets>(load4(x + i), aa, &x02, &x13);
      s0 = mac4<kOffsets>(s0, x02, x13, wr + i, bb);
    }
    acc[r] = s0;
  }
  for (r = 0; r < rows; ++r) acc[r] += dot_plain(x + k4, w + static_cast<size_t>(r) * k + k4, k - k4, a, b);
}

inline void dot_rows(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
  if (a == 0 && b == 0) {  // symmetric weights, kernel_sum given (ExecuTorch's lowering): no SADD16
    dot_rows_dsp<false>(x, w, k, rows, a, b, acc);
  } else {
    dot_rows_dsp<true>(x, w, k, rows, a, b, acc);
  }
}
#else
// Other cores: one pass over x for up to 4 rows, each x[i] + a loaded and offset once.
inline void dot_rows(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
  if (rows != kRowsPerPass) {
    for (int32_t r = 0; r < rows; ++r) acc[r] = dot_plain(x, w + r * k, k, a, b);
    return;
  }
  int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const int8_t* w1 = w + k;
  const int8_t* w2 = w1 + k;
  const int8_t* w3 = w2 + k;
  for (int32_t i = 0; i < k; ++i) {
    const int32_t xi = static_cast<int32_t>(x[i]) + a;
    s0 += xi * (static_cast<int32_t>(w[i]) + b);
    s1 += xi * (static_cast<int32_t>(w1[i]) + b);
    s2 += xi * (static_cast<int32_t>(w2[i]) + b);
    s3 += xi * (static_cast<int32_t>(w3[i]) + b);
  }
  acc[0] = s0, acc[1] = s1, acc[2] = s2, acc[3] = s3;
}
#endif

}  // namespace kernels
}  // namespace mcu

#endif  // MCU_KERNELS_INT8_DOT_H
