// mcu-gen-kernel: op=aten::_native_batch_norm_legit.no_stats_out fn=aten_native_batch_norm_legit_no_stats_out sig=TttBDDOOOX dtypes=float32
// aten::_native_batch_norm_legit.no_stats_out(Tensor input, Tensor? weight, Tensor? bias,
//     bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean,
//     Tensor(c!) save_invstd)
// Batch norm with the batch's own statistics (what InstanceNorm and a
// GroupNorm/BatchNorm without running stats decompose to): per channel of
// [N, C, *], mean and biased variance over N and the trailing dims;
// save_mean / save_invstd are [C] (shape_common.h: batch_norm_training).
#include "shape_common.h"

namespace mcu::kernels {

Error aten_native_batch_norm_legit_no_stats_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(6);
  const TensorRef mean_out = ctx.tensor(7);
  const TensorRef invstd_out = ctx.tensor(8);
  if (!is_float(in) || !in.is_contiguous() || !is_float(out) || !out.is_contiguous() || !out.same_shape(in) ||
      in.dim < 2) {
    return Error::KernelFailed;
  }
  const int32_t n = in.sizes[0];
  const int32_t c = in.sizes[1];
  BatchNormTraining bn;
  bn.eps = static_cast<float>(ctx.double_arg(5));
  if (!is_f32_vector(mean_out, c) || !is_f32_vector(invstd_out, c) || !optional_f32(ctx, 1, c, &bn.weight) ||
      !optional_f32(ctx, 2, c, &bn.bias)) {
    return Error::KernelFailed;
  }
  bn.save_mean = static_cast<float*>(mean_out.data);
  bn.save_invstd = static_cast<float*>(invstd_out.data);
  batch_norm_training(in.f32(), out.f32(), n, c, c > 0 && n > 0 ? in.numel / (n * c) : 0, bn);
  return Error::Ok;
}

}  // namespace mcu::kernels
