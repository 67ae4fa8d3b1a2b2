// mcu-gen-kernel: op=aten::native_layer_norm.out fn=aten_native_layer_norm_out sig=TLttDOOOX dtypes=float32
//
// aten::native_layer_norm.out(Tensor input, int[] normalized_shape,
//     Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) out0,
//     Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
// Normalises over the trailing normalized_shape dims; out1 = mean and
// out2 = rstd (one value per normalised row, shape [..., 1, ..., 1]).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stddef.h>

#include "conv_common.h"

namespace mcu::kernels {

namespace {

// Optional per-element affine parameter of `n` floats; false if malformed.
bool read_affine(const KernelContext& ctx, int32_t i, int32_t n, const float** data) {
  *data = nullptr;
  if (ctx.is_none(i)) return true;
  TensorRef t = ctx.tensor(i);
  if (!is_f32_contiguous(t) || t.numel != n) return false;
  *data = t.f32();
  return true;
}

}  // namespace

Error aten_native_layer_norm_out(const KernelContext& ctx) {
  TensorRef in = ctx.tensor(0);
  IntList shape = ctx.int_list(1);
  const float eps = static_cast<float>(ctx.double_arg(4));
  TensorRef out = ctx.tensor(5);
  TensorRef mean_out = ctx.tensor(6);
  TensorRef rstd_out = ctx.tensor(7);
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out) || !out.same_shape(in)) return Error::KernelFailed;
  if (!is_f32_contiguous(mean_out) || !is_f32_contiguous(rstd_out)) return Error::KernelFailed;
  const int32_t k = shape.size();
  if (k < 1 || k > in.dim) return Error::KernelFailed;
  int32_t n = 1;
  for (int32_t i = 0; i < k; ++i) {
    if (shape[i] != in.size(in.dim - k + i)) return Error::KernelFailed;
    n *= in.size(in.dim - k + i);
  }
  const int32_t rows = n > 0 ? in.numel / n : 0;
  if (mean_out.numel != rows || rstd_out.numel != rows) return Error::KernelFailed;
  const float* weight = nullptr;
  const float* bias = nullptr;
  if (!read_affine(ctx, 2, n, &weight) || !read_affine(ctx, 3, n, &bias)) return Error::KernelFailed;
  if (n == 0) return Error::Ok;

  const float inv_n = 1.0f / static_cast<float>(n);
  for (int32_t r = 0; r < rows; ++r) {
    const float* x = in.f32() + static_cast<size_t>(r) * n;
    float* y = out.f32() + static_cast<size_t>(r) * n;
    float sum = 0.0f;
    for (int32_t i = 0; i < n; ++i) sum += x[i];
    const float mean = sum * inv_n;
    float sq = 0.0f;
    for (int32_t i = 0; i < n; ++i) {
      const float c = x[i] - mean;
      sq += c * c;
    }
    const float rstd = 1.0f / sqrtf(sq * inv_n + eps);
    for (int32_t i = 0; i < n; ++i) {
      float v = (x[i] - mean) * rstd;
      if (weight != nullptr) v *= weight[i];
      if (bias != nullptr) v += bias[i];
      y[i] = v;
    }
    mean_out.f32()[r] = mean;
    rstd_out.f32()[r] = rstd;
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
