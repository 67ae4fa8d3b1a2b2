// mcu-gen-kernel: op=aten::_native_batch_norm_legit.out fn=aten_native_batch_norm_legit_out sig=TttOOBDDOOOX dtypes=float32
// aten::_native_batch_norm_legit.out(Tensor input, Tensor? weight, Tensor? bias,
//     Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps, *,
//     Tensor(d!) out, Tensor(e!) save_mean, Tensor(f!) save_invstd) -> (Tensor(d!), Tensor(e!), Tensor(f!))
// Batch norm over dim 1 of [N, C, *] with running statistics (state tensors: the signature
// makes them arena tensors, 'O'). training: normalize with the batch's mean and biased
// variance, save them ([C] mean and 1/sqrt(var + eps)) and update the running stats in place
// with `momentum` (shape_common.h: batch_norm_training). Not training: normalize with the
// running stats; save_mean / save_invstd are empty, as in ATen.
#include <math.h>
#include <stddef.h>

#include "shape_common.h"

namespace mcu::kernels {

Error aten_native_batch_norm_legit_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef running_mean = ctx.tensor(3);
  const TensorRef running_var = ctx.tensor(4);
  const bool training = ctx.bool_arg(5);
  const TensorRef out = ctx.tensor(8);
  const TensorRef mean_out = ctx.tensor(9);
  const TensorRef invstd_out = ctx.tensor(10);
  if (!is_float(in) || !in.is_contiguous() || !is_float(out) || !out.is_contiguous() || !out.same_shape(in) ||
      in.dim < 2) {
    return Error::KernelFailed;
  }
  const int32_t n = in.sizes[0];
  const int32_t c = in.sizes[1];
  const int32_t inner = c > 0 && n > 0 ? in.numel / (n * c) : 0;
  BatchNormTraining bn;
  bn.eps = static_cast<float>(ctx.double_arg(7));
  bn.momentum = static_cast<float>(ctx.double_arg(6));
  if (!is_f32_vector(running_mean, c) || !is_f32_vector(running_var, c) || !optional_f32(ctx, 1, c, &bn.weight) ||
      !optional_f32(ctx, 2, c, &bn.bias)) {
    return Error::KernelFailed;
  }
  if (training) {
    if (!is_f32_vector(mean_out, c) || !is_f32_vector(invstd_out, c)) return Error::KernelFailed;
    bn.save_mean = static_cast<float*>(mean_out.data);
    bn.save_invstd = static_cast<float*>(invstd_out.data);
    bn.running_mean = static_cast<float*>(running_mean.data);
    bn.running_var = static_cast<float*>(running_var.data);
    batch_norm_training(in.f32(), out.f32(), n, c, inner, bn);
    return Error::Ok;
  }
  if (mean_out.numel != 0 || invstd_out.numel != 0) return Error::KernelFailed;
  const float* mean = static_cast<const float*>(running_mean.data);
  const float* var = static_cast<const float*>(running_var.data);
  const float* x = in.f32();
  float* y = out.f32();
  for (int32_t ch = 0; ch < c; ++ch) {
    const float invstd = 1.0f / sqrtf(var[ch] + bn.eps);
    const float a = bn.weight != nullptr ? invstd * bn.weight[ch] : invstd;
    const float b = (bn.bias != nullptr ? bn.bias[ch] : 0.0f) - mean[ch] * a;
    for (int32_t s = 0; s < n; ++s) {
      const size_t base = (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) y[base + i] = x[base + i] * a + b;
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
