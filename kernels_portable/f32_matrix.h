// fp32 matrix helpers shared by mm, bmm, addmm and the linear kernels.
// Row-major, contiguous; nothing is transposed at run time: a linear layer's
// weight [out, in] is read row by row (a dot product per output), a matrix
// product B [K, N] is read row by row (out row += a[m][k] * B row k).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "conv_common.h"

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
    for (int32_t j = 0; j < out_features; ++j) {
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
