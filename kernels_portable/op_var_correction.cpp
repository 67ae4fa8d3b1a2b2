// mcu-gen-kernel: op=aten::var.correction_out fn=aten_var_correction_out sig=TlsBOO dtypes=float32
// aten::var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//     bool keepdim=False, Tensor(a!) out) -> Tensor(a!)
// Variance over `dim` (None or []: all dims) with divisor N - correction
// (None: 1); two passes (mean, then squared deviations), as ATen's CPU kernel
// is numerically. N - correction <= 0 gives inf/NaN as in ATen.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_var_correction_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(4);
  if (in.dtype != DType::Float || out.dtype != DType::Float) return Error::KernelFailed;
  const double correction = ctx.is_none(2) ? 1.0 : ctx.scalar(2).as<double>();
  Reduction r;
  if (!r.init(in, reduced_dims(ctx, 1, in.dim)) || !r.matches(out, ctx.bool_arg(3))) return Error::KernelFailed;
  const float* x = in.f32();
  float* y = out.f32();
  const float n = static_cast<float>(r.count());
  const float divisor = static_cast<float>(r.count() - correction);
  r.for_each_output([&](int32_t o, int32_t base) {
    float sum = 0.0f;
    r.for_each_reduced(base, [&](int32_t offset, int32_t) { sum += x[offset]; });
    const float mean = sum / n;
    float sq = 0.0f;
    r.for_each_reduced(base, [&](int32_t offset, int32_t) {
      const float d = x[offset] - mean;
      sq += d * d;
    });
    y[o] = sq / divisor;
  });
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
