// mcu-gen-kernel: op=aten::_native_batch_norm_legit.no_stats_out fn=aten_native_batch_norm_legit_no_stats_out sig=TttBDDOOOX dtypes=float32
// aten::_native_batch_norm_legit.no_stats_out(Tensor input, Tensor? weight, Tensor? bias,
//     bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean,
//     Tensor(c!) save_invstd)
// Batch norm with the batch's own statistics (what InstanceNorm and a
// GroupNorm/BatchNorm without running stats decompose to): per channel of
// [N, C, *], mean and biased variance over N and the trailing dims;
// save_mean / save_invstd are [C].
#include <math.h>
#include <stddef.h>

#include "conv_common.h"

namespace mcu::kernels {

Error aten_native_batch_norm_legit_no_stats_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const float eps = static_cast<float>(ctx.double_arg(5));
  const TensorRef out = ctx.tensor(6);
  const TensorRef mean_out = ctx.tensor(7);
  const TensorRef invstd_out = ctx.tensor(8);
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out) || !out.same_shape(in) || in.dim < 2) {
    return Error::KernelFailed;
  }
  const int32_t n = in.sizes[0];
  const int32_t c = in.sizes[1];
  const int32_t inner = c > 0 && n > 0 ? in.numel / (n * c) : 0;
  if (!is_f32_contiguous(mean_out) || !is_f32_contiguous(invstd_out) || mean_out.numel != c ||
      invstd_out.numel != c) {
    return Error::KernelFailed;
  }
  const float* weight = nullptr;
  const float* bias = nullptr;
  for (int32_t i = 1; i <= 2; ++i) {
    if (ctx.is_none(i)) continue;
    const TensorRef t = ctx.tensor(i);
    if (!is_f32_contiguous(t) || t.numel != c) return Error::KernelFailed;
    (i == 1 ? weight : bias) = t.f32();
  }
  const float count = static_cast<float>(n) * static_cast<float>(inner);
  for (int32_t ch = 0; ch < c; ++ch) {
    float sum = 0.0f;
    for (int32_t s = 0; s < n; ++s) {
      const float* x = in.f32() + (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) sum += x[i];
    }
    const float mean = count > 0 ? sum / count : 0.0f;
    float sq = 0.0f;
    for (int32_t s = 0; s < n; ++s) {
      const float* x = in.f32() + (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) {
        const float d = x[i] - mean;
        sq += d * d;
      }
    }
    const float invstd = 1.0f / sqrtf((count > 0 ? sq / count : 0.0f) + eps);
    const float scale = invstd * (weight != nullptr ? weight[ch] : 1.0f);
    const float shift = (bias != nullptr ? bias[ch] : 0.0f) - mean * scale;
    for (int32_t s = 0; s < n; ++s) {
      const size_t base = (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) out.f32()[base + i] = in.f32()[base + i] * scale + shift;
    }
    mean_out.f32()[ch] = mean;
    invstd_out.f32()[ch] = invstd;
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
