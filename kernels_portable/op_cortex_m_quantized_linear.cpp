// mcu-gen-kernel: op=cortex_m::quantized_linear.out fn=cortex_m_quantized_linear_out sig=TTttIIILLIIOO dtypes=int8
//
// cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias,
//     Tensor? kernel_sum, int input_offset, int filter_offset, int output_offset,
//     int[] requantize_multipliers, int[] requantize_shifts, int activation_max,
//     int activation_min, *, Tensor(a!) out)
// input [..., K] int8, weights [N, K] int8, out [..., N] int8, all contiguous;
// bias and kernel_sum int32 with N elements. As the reference:
//   kernel_sum given: acc = sum(x * w) + filter_offset * sum(x) + kernel_sum[n]
//                     (bias and input_offset are not read: kernel_sum already
//                     holds input_offset * sum(w + filter_offset) + bias)
//   otherwise:        acc = sum((x + input_offset) * (w + filter_offset)) + bias[n]
//   out = clamp(requantize(acc, m, s) + output_offset, activation_min, activation_max)
// The multiplier/shift lists hold one value (per tensor, what ExecuTorch
// emits) or N values (per output channel; the Python reference would read
// only the first).
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

namespace {

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
void dot_rows(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
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
[[gnu::noinline]] void dot_rows_dsp(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
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

void dot_rows(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
  if (a == 0 && b == 0) {  // symmetric weights, kernel_sum given (ExecuTorch's lowering): no SADD16
    dot_rows_dsp<false>(x, w, k, rows, a, b, acc);
  } else {
    dot_rows_dsp<true>(x, w, k, rows, a, b, acc);
  }
}
#else
// Other cores: one pass over x for up to 4 rows, each x[i] + a loaded and offset once.
void dot_rows(const int8_t* x, const int8_t* w, int32_t k, int32_t rows, int32_t a, int32_t b, int32_t* acc) {
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

}  // namespace

Error cortex_m_quantized_linear_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef w = ctx.tensor(1);
  const TensorRef out = ctx.tensor(11);
  const int64_t input_offset = ctx.int_arg(4);
  const int64_t filter_offset = ctx.int_arg(5);
  const int64_t output_offset = ctx.int_arg(6);
  const IntList mults = ctx.int_list(7);
  const IntList shifts = ctx.int_list(8);
  const int64_t act_max = ctx.int_arg(9);
  const int64_t act_min = ctx.int_arg(10);
  if (!is_int8(in) || !is_int8(w) || !is_int8(out) || w.dim != 2 || in.dim < 1 || out.dim != in.dim) {
    return Error::KernelFailed;
  }
  if (!identity_order(in) || !identity_order(w) || !identity_order(out)) return Error::KernelFailed;
  const int32_t n_out = w.size(0);
  const int32_t k = w.size(1);
  if (k < 1 || n_out < 1 || k > kMaxLinearK || in.size(in.dim - 1) != k || out.size(out.dim - 1) != n_out) {
    return Error::KernelFailed;
  }
  for (int32_t d = 0; d + 1 < in.dim; ++d) {
    if (in.size(d) != out.size(d)) return Error::KernelFailed;
  }
  const int32_t rows = in.numel / k;
  const int32_t* bias = nullptr;
  const int32_t* kernel_sum = nullptr;
  if (!ctx.is_none(3)) {
    const TensorRef ks = ctx.tensor(3);
    if (!is_int32_vector(ks, n_out)) return Error::KernelFailed;
    kernel_sum = ks.i32();
  } else if (!ctx.is_none(2)) {
    const TensorRef b = ctx.tensor(2);
    if (!is_int32_vector(b, n_out)) return Error::KernelFailed;
    bias = b.i32();
  }
  if (input_offset < -kMaxInputOffset || input_offset > kMaxInputOffset || filter_offset < -kMaxInputOffset ||
      filter_offset > kMaxInputOffset || output_offset < INT32_MIN || output_offset > INT32_MAX) {
    return Error::KernelFailed;
  }
  if (!valid_int8_range(act_min, act_max)) return Error::KernelFailed;
  const int32_t n_params = mults.size();
  if ((n_params != 1 && n_params != n_out) || shifts.size() != n_params) return Error::KernelFailed;
  for (int32_t i = 0; i < n_params; ++i) {
    if (!valid_multiplier(mults[i]) || !valid_shift(shifts[i])) return Error::KernelFailed;
  }
  int32_t m = static_cast<int32_t>(mults[0]);
  int32_t sh = static_cast<int32_t>(shifts[0]);
  const int32_t off_x = kernel_sum != nullptr ? 0 : static_cast<int32_t>(input_offset);
  const int32_t off_w = static_cast<int32_t>(filter_offset);
  const int32_t* added = kernel_sum != nullptr ? kernel_sum : bias;  // c[n] (none: 0)
  const int32_t out_off = static_cast<int32_t>(output_offset), lo = static_cast<int32_t>(act_min),
                hi = static_cast<int32_t>(act_max);
  const int8_t* x = in.i8();
  const int8_t* weights = w.i8();
  int8_t* y = out.i8();
  for (int32_t r = 0; r < rows; ++r) {
    const int8_t* xr = x + static_cast<size_t>(r) * k;
    int8_t* yr = y + static_cast<size_t>(r) * n_out;
    for (int32_t n0 = 0; n0 < n_out; n0 += kRowsPerPass) {
      const int32_t count = n_out - n0 < kRowsPerPass ? n_out - n0 : kRowsPerPass;
      int32_t acc[kRowsPerPass];
      dot_rows(xr, weights + static_cast<size_t>(n0) * k, k, count, off_x, off_w, acc);
      for (int32_t j = 0; j < count; ++j) {
        const int32_t n = n0 + j;
        const int32_t sum = added != nullptr ? wrap_add(acc[j], added[n]) : acc[j];
        if (n_params > 1) {
          m = static_cast<int32_t>(mults[n]);
          sh = static_cast<int32_t>(shifts[n]);
        }
        yr[n] = requantize_to_int8(sum, m, sh, out_off, lo, hi);
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
