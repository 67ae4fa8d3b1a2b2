// mcu-gen-kernel: op=aten::_native_batch_norm_legit_no_training.out fn=aten_native_batch_norm_legit_no_training_out sig=TttTTDDOOOX dtypes=float32
//
// aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight,
//     Tensor? bias, Tensor running_mean, Tensor running_var, float momentum,
//     float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
//     -> (Tensor(a!), Tensor(b!), Tensor(c!))
// Inference batch norm over dim 1 of [N, C, ...]: out0 = x * a[c] + b[c] with
// a = weight / sqrt(var + eps), b = bias - mean * a (as ATen computes it).
// out1 and out2 are empty in ATen's inference variant and are not written.
// out0 may be the input (in place).
#include <math.h>
#include <stddef.h>

#include "conv_common.h"

namespace mcu::kernels {

namespace {

// Per-channel float vector argument; false if not fp32 [C] (null for None when allowed).
bool read_channels(const KernelContext& ctx, int32_t i, int32_t channels, bool optional, const float** data) {
  *data = nullptr;
  if (optional && ctx.is_none(i)) return true;
  TensorRef t = ctx.tensor(i);
  if (!is_f32_contiguous(t) || t.dim != 1 || t.numel != channels) return false;
  *data = t.f32();
  return true;
}

}  // namespace

Error aten_native_batch_norm_legit_no_training_out(const KernelContext& ctx) {
  TensorRef in = ctx.tensor(0);
  const float eps = static_cast<float>(ctx.double_arg(6));
  TensorRef out = ctx.tensor(7);
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out) || !out.same_shape(in)) return Error::KernelFailed;
  if (in.dim < 2) return Error::KernelFailed;
  const int32_t batch = in.size(0), channels = in.size(1);
  int32_t plane = 1;
  for (int32_t d = 2; d < in.dim; ++d) plane *= in.size(d);
  const float *weight = nullptr, *bias = nullptr, *mean = nullptr, *var = nullptr;
  if (!read_channels(ctx, 1, channels, true, &weight) || !read_channels(ctx, 2, channels, true, &bias) ||
      !read_channels(ctx, 3, channels, false, &mean) || !read_channels(ctx, 4, channels, false, &var)) {
    return Error::KernelFailed;
  }
  const float* x = in.f32();
  float* y = out.f32();
  for (int32_t c = 0; c < channels; ++c) {
    const float invstd = 1.0f / sqrtf(var[c] + eps);
    const float a = weight != nullptr ? invstd * weight[c] : invstd;
    const float b = (bias != nullptr ? bias[c] : 0.0f) - mean[c] * a;
    for (int32_t n = 0; n < batch; ++n) {
      const size_t base = (static_cast<size_t>(n) * channels + c) * plane;
      for (int32_t i = 0; i < plane; ++i) y[base + i] = x[base + i] * a + b;
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
