// fp32 matrix helpers shared by mm, bmm, addmm and the linear kernels.
// Row-major, contiguous; nothing is transposed at run time: a linear layer's
// weight [out, in] is read row by row (a dot product per output), a matrix
// product B [K, N] is read row by row (out row += a[m][k] * B row k).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "conv_common.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>
#endif

// Every product and every sum rounded (no fused multiply-add): GCC's C++ default
// (fp-contract=fast) formed VFMA on FPU cores, so the devices differed from the
// host runner and from the reference emulation (mcu_gen/reference/fp32_emulation.py's
// addmm) in the last bit; VMUL + VADD are also 2 cycles against VFMA's 3 (docs/cycles.md).
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

namespace mcu::kernels {

// sum_i a[i] * b[i], four partial sums to shorten the dependency chain.
inline float dot_f32(const float* a, const float* b, int32_t n) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  const float* const end4 = a + (n & ~3);
  const float* const end = a + n;
  for (; a != end4; a += 4, b += 4) {
    s0 += a[0] * b[0];
    s1 += a[1] * b[1];
    s2 += a[2] * b[2];
    s3 += a[3] * b[3];
  }
  for (; a != end; ++a, ++b) s0 += a[0] * b[0];
  return (s0 + s1) + (s2 + s3);
}

// The four partial sums of dot_f32 (s_j over the indices i = j mod 4 below
// n4 * 4) of 4 rows of a matrix with `stride` floats between rows: partial[q][j].
// Each loaded input serves the 4 rows. M33/M4F: in assembly (VLDM of 4 inputs and
// 4 weights per row, products in rotation; GCC 12 loads every value with a VLDR);
// M55: one MVE vector per row holds the 4 partial sums; elsewhere plain C. Every
// form computes dot_f32's products and sums in its order (each rounded).
inline void dot4_partials(const float* x, const float* w, int32_t stride, int32_t n4, float (&partial)[4][4]) {
#if defined(__arm__) && defined(__ARM_FP) && !defined(__ARM_FEATURE_MVE)
  const float* w1 = w + stride;
  const float* w2 = w1 + stride;
  const float* w3 = w2 + stride;
  float* const acc = &partial[0][0];
  asm volatile(
      "vldmia %[acc], {s16-s31}\n\t"
      "1:\n\t"
      "vldmia %[x]!, {s0-s3}\n\t"
      "vldmia %[w0]!, {s4-s7}\n\t"
      "vmul.f32 s8, s4, s0\n\t"
      "vmul.f32 s9, s5, s1\n\t"
      "vadd.f32 s16, s16, s8\n\t"
      "vmul.f32 s10, s6, s2\n\t"
      "vadd.f32 s17, s17, s9\n\t"
      "vmul.f32 s11, s7, s3\n\t"
      "vadd.f32 s18, s18, s10\n\t"
      "vldmia %[w1]!, {s4-s7}\n\t"
      "vadd.f32 s19, s19, s11\n\t"
      "vmul.f32 s12, s4, s0\n\t"
      "vmul.f32 s13, s5, s1\n\t"
      "vadd.f32 s20, s20, s12\n\t"
      "vmul.f32 s14, s6, s2\n\t"
      "vadd.f32 s21, s21, s13\n\t"
      "vmul.f32 s15, s7, s3\n\t"
      "vadd.f32 s22, s22, s14\n\t"
      "vldmia %[w2]!, {s4-s7}\n\t"
      "vadd.f32 s23, s23, s15\n\t"
      "vmul.f32 s8, s4, s0\n\t"
      "vmul.f32 s9, s5, s1\n\t"
      "vadd.f32 s24, s24, s8\n\t"
      "vmul.f32 s10, s6, s2\n\t"
      "vadd.f32 s25, s25, s9\n\t"
      "vmul.f32 s11, s7, s3\n\t"
      "vadd.f32 s26, s26, s10\n\t"
      "vldmia %[w3]!, {s4-s7}\n\t"
      "vadd.f32 s27, s27, s11\n\t"
      "vmul.f32 s12, s4, s0\n\t"
      "vmul.f32 s13, s5, s1\n\t"
      "vadd.f32 s28, s28, s12\n\t"
      "vmul.f32 s14, s6, s2\n\t"
      "vadd.f32 s29, s29, s13\n\t"
      "vmul.f32 s15, s7, s3\n\t"
      "vadd.f32 s30, s30, s14\n\t"
      "subs %[n], %[n], #1\n\t"
      "vadd.f32 s31, s31, s15\n\t"
      "bne 1b\n\t"
      "vstmia %[acc], {s16-s31}\n\t"
      : [x] "+r"(x), [w0] "+r"(w), [w1] "+r"(w1), [w2] "+r"(w2), [w3] "+r"(w3), [n] "+r"(n4)
      : [acc] "r"(acc)
      : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
        "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
        "memory");
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
  float32x4_t a0 = vld1q_f32(partial[0]), a1 = vld1q_f32(partial[1]);
  float32x4_t a2 = vld1q_f32(partial[2]), a3 = vld1q_f32(partial[3]);
  const float* w1 = w + stride;
  const float* w2 = w1 + stride;
  const float* w3 = w2 + stride;
  for (int32_t i = 0; i < n4; ++i, x += 4, w += 4, w1 += 4, w2 += 4, w3 += 4) {
    const float32x4_t xv = vld1q_f32(x);
    a0 = vaddq_f32(a0, vmulq_f32(vld1q_f32(w), xv));
    a1 = vaddq_f32(a1, vmulq_f32(vld1q_f32(w1), xv));
    a2 = vaddq_f32(a2, vmulq_f32(vld1q_f32(w2), xv));
    a3 = vaddq_f32(a3, vmulq_f32(vld1q_f32(w3), xv));
  }
  vst1q_f32(partial[0], a0);
  vst1q_f32(partial[1], a1);
  vst1q_f32(partial[2], a2);
  vst1q_f32(partial[3], a3);
#else
  for (int32_t i = 0; i < n4; ++i, x += 4, w += 4) {
    for (int q = 0; q < 4; ++q) {
      for (int j = 0; j < 4; ++j) partial[q][j] += w[q * stride + j] * x[j];
    }
  }
#endif
}

// y[i] += alpha * x[i]
inline void axpy_f32(float* y, float alpha, const float* x, int32_t n) {
  float* const end4 = y + (n & ~3);
  float* const end = y + n;
  for (; y != end4; y += 4, x += 4) {
    y[0] += alpha * x[0];
    y[1] += alpha * x[1];
    y[2] += alpha * x[2];
    y[3] += alpha * x[3];
  }
  for (; y != end; ++y, ++x) y[0] += alpha * x[0];
}

// out[M, N] = a[M, K] @ b[K, N]
inline void matmul_f32(const float* a, const float* b, float* out, int32_t m, int32_t k, int32_t n) {
  for (int32_t r = 0; r < m; ++r) {
    float* o = out + static_cast<size_t>(r) * n;
    const float* ar = a + static_cast<size_t>(r) * k;
    for (int32_t j = 0; j < n; ++j) o[j] = 0.0f;
    for (int32_t t = 0; t < k; ++t) axpy_f32(o, ar[t], b + static_cast<size_t>(t) * n, n);
  }
}

// out[M, O] = clamp(in[M, I] @ weight[O, I]^T + bias[O], lo, hi)
inline void linear_f32(const float* in, const float* weight, const float* bias, float* out, int32_t m,
                       int32_t in_features, int32_t out_features, float lo, float hi) {
  for (int32_t r = 0; r < m; ++r) {
    const float* x = in + static_cast<size_t>(r) * in_features;
    float* o = out + static_cast<size_t>(r) * out_features;
    int32_t j = 0;
    const int32_t n4 = in_features / 4;
    for (; n4 > 0 && j + 4 <= out_features; j += 4) {  // 4 outputs per pass over the input
      const float* wj = weight + static_cast<size_t>(j) * in_features;
      float part[4][4] = {};
      dot4_partials(x, wj, in_features, n4, part);
      for (int q = 0; q < 4; ++q) {
        float s0 = part[q][0];
        const float* wq = wj + static_cast<size_t>(q) * in_features;
        for (int32_t i = n4 * 4; i < in_features; ++i) s0 += x[i] * wq[i];
        float v = (s0 + part[q][1]) + (part[q][2] + part[q][3]);
        if (bias != nullptr) v += bias[j + q];
        o[j + q] = v;
      }
    }
    for (; j < out_features; ++j) {
      float v = dot_f32(x, weight + static_cast<size_t>(j) * in_features, in_features);
      if (bias != nullptr) v += bias[j];
      o[j] = v;
    }
    clamp_f32(o, out_features, lo, hi);
  }
}

// Checks a linear layer's shapes: input [..., I], weight [O, I], bias [O] or
// none, out [..., O]; gives M (rows), I and O. Returns false on mismatch.
inline bool linear_shapes(const TensorRef& in, const TensorRef& weight, int32_t bias_numel, bool has_bias,
                          const TensorRef& out, int32_t* m, int32_t* in_features, int32_t* out_features) {
  if (!is_f32_contiguous(in) || !is_f32_contiguous(weight) || !is_f32_contiguous(out)) return false;
  if (weight.dim != 2 || in.dim < 1 || out.dim != in.dim) return false;
  const int32_t i_f = weight.size(1), o_f = weight.size(0);
  if (in.size(in.dim - 1) != i_f || out.size(out.dim - 1) != o_f) return false;
  int32_t rows = 1;
  for (int32_t d = 0; d + 1 < in.dim; ++d) {
    if (in.size(d) != out.size(d)) return false;
    rows *= in.size(d);
  }
  if (has_bias && bias_numel != o_f) return false;
  *m = rows;
  *in_features = i_f;
  *out_features = o_f;
  return true;
}

// Runs a linear layer: argument 0 input, 1 weight, 2 bias (optional), and
// `out_index` the out tensor.
inline Error run_linear(const KernelContext& ctx, int32_t out_index, float lo, float hi) {
  const float* bias = nullptr;
  int32_t bias_numel = 0;
  if (!read_bias(ctx, 2, &bias, &bias_numel)) return Error::KernelFailed;
  TensorRef in = ctx.tensor(0);
  TensorRef weight = ctx.tensor(1);
  TensorRef out = ctx.tensor(out_index);
  int32_t m = 0, i_f = 0, o_f = 0;
  if (!linear_shapes(in, weight, bias_numel, bias != nullptr, out, &m, &i_f, &o_f)) return Error::KernelFailed;
  linear_f32(in.f32(), weight.f32(), bias, out.f32(), m, i_f, o_f, lo, hi);
  return Error::Ok;
}

}  // namespace mcu::kernels

#pragma GCC pop_options
