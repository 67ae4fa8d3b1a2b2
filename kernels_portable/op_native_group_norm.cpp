// mcu-gen-kernel: op=aten::native_group_norm.out fn=aten_native_group_norm_out sig=TttIIIIDOOOX dtypes=float32
// aten::native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
//     SymInt HxW, int group, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
// Normalises each (sample, group) of C/group channels x HxW elements with its
// own mean and biased variance, then the per-channel affine; out1 = mean and
// out2 = rstd, shape [N, group].
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stddef.h>

#include "conv_common.h"

namespace mcu::kernels {

namespace {

bool read_channel_param(const KernelContext& ctx, int32_t i, int64_t c, const float** data) {
  *data = nullptr;
  if (ctx.is_none(i)) return true;
  const TensorRef t = ctx.tensor(i);
  if (!is_f32_contiguous(t) || t.numel != c) return false;
  *data = t.f32();
  return true;
}

}  // namespace

Error aten_native_group_norm_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const int64_t n = ctx.int_arg(3);
  const int64_t c = ctx.int_arg(4);
  const int64_t hw = ctx.int_arg(5);
  const int64_t groups = ctx.int_arg(6);
  const float eps = static_cast<float>(ctx.double_arg(7));
  const TensorRef out = ctx.tensor(8);
  const TensorRef mean_out = ctx.tensor(9);
  const TensorRef rstd_out = ctx.tensor(10);
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out) || !out.same_shape(in)) return Error::KernelFailed;
  if (!is_f32_contiguous(mean_out) || !is_f32_contiguous(rstd_out)) return Error::KernelFailed;
  if (n < 0 || c <= 0 || hw < 0 || groups <= 0 || c % groups != 0 || n * c * hw != in.numel) return Error::KernelFailed;
  if (mean_out.numel != n * groups || rstd_out.numel != n * groups) return Error::KernelFailed;
  const float* weight = nullptr;
  const float* bias = nullptr;
  if (!read_channel_param(ctx, 1, c, &weight) || !read_channel_param(ctx, 2, c, &bias)) return Error::KernelFailed;
  const int64_t per_group = c / groups;
  const int64_t count = per_group * hw;
  const float inv_count = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t g = 0; g < groups; ++g) {
      const size_t base = static_cast<size_t>((s * c + g * per_group) * hw);
      const float* x = in.f32() + base;
      float sum = 0.0f;
      for (int64_t i = 0; i < count; ++i) sum += x[i];
      const float mean = sum * inv_count;
      float sq = 0.0f;
      for (int64_t i = 0; i < count; ++i) {
        const float d = x[i] - mean;
        sq += d * d;
      }
      const float rstd = 1.0f / sqrtf(sq * inv_count + eps);
      float* y = out.f32() + base;
      for (int64_t k = 0; k < per_group; ++k) {
        const int64_t ch = g * per_group + k;
        const float scale = rstd * (weight != nullptr ? weight[ch] : 1.0f);
        const float shift = (bias != nullptr ? bias[ch] : 0.0f) - mean * scale;
        for (int64_t i = 0; i < hw; ++i) y[k * hw + i] = x[k * hw + i] * scale + shift;
      }
      mean_out.f32()[s * groups + g] = mean;
      rstd_out.f32()[s * groups + g] = rstd;
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
