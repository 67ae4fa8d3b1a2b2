// mcu-gen-kernel: op=aten::linalg_vector_norm.out fn=aten_linalg_vector_norm_out sig=TSlBiOO dtypes=float32
// aten::linalg_vector_norm.out(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *,
//     ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// The vector p-norm over dim (None or []: all dims), fp32: ord 2 (sqrt of the
// sum of squares), 1, inf (max |x|), -inf (min |x|), 0 (count of non-zeros)
// and any other p ((sum |x|^p)^(1/p)). NaN propagates.
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_linalg_vector_norm_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(5);
  if (in.dtype != DType::Float || out.dtype != DType::Float) return Error::KernelFailed;
  if (!ctx.is_none(4) && ctx.int_arg(4) != static_cast<int64_t>(out.dtype)) return Error::KernelFailed;
  const double ord = ctx.scalar_arg(1);
  Reduction r;
  if (!r.init(in, reduced_dims(ctx, 2, in.dim)) || !r.matches(out, ctx.bool_arg(3))) return Error::KernelFailed;
  // ATen refuses an empty reduction for the norms that have no identity.
  if (r.count() == 0 && r.out_numel() > 0 && (ord < 0 || isinf(ord))) return Error::KernelFailed;
  const float* x = in.f32();
  float* y = out.f32();
  const float p = static_cast<float>(ord);
  r.for_each_output([&](int32_t o, int32_t base) {
    float acc = 0.0f;
    if (isinf(ord)) {
      const bool mx = ord > 0;
      acc = mx ? 0.0f : INFINITY;
      bool nan = false;
      r.for_each_reduced(base, [&](int32_t offset, int32_t) {
        const float a = fabsf(x[offset]);
        if (a != a) nan = true;
        else if (mx ? a > acc : a < acc) acc = a;
      });
      y[o] = nan ? NAN : acc;
      return;
    }
    if (ord == 2.0) {
      r.for_each_reduced(base, [&](int32_t offset, int32_t) { acc += x[offset] * x[offset]; });
      y[o] = sqrtf(acc);
    } else if (ord == 1.0) {
      r.for_each_reduced(base, [&](int32_t offset, int32_t) { acc += fabsf(x[offset]); });
      y[o] = acc;
    } else if (ord == 0.0) {
      r.for_each_reduced(base, [&](int32_t offset, int32_t) {
        const float v = x[offset];
        acc += (v != 0.0f) ? 1.0f : 0.0f;  // NaN counts as non-zero
        if (v != v) acc = NAN;
      });
      y[o] = acc;
    } else {
      r.for_each_reduced(base, [&](int32_t offset, int32_t) { acc += powf(fabsf(x[offset]), p); });
      y[o] = powf(acc, 1.0f / p);
    }
  });
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
