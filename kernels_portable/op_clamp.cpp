// mcu-gen-kernel: op=aten::clamp.out fn=aten_clamp_out sig=TssOO dtypes=float32 inplace=0
// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out)
// out = min(max(self, min), max); a None bound is not applied. As in ATen,
// min > max gives max everywhere, and NaN stays NaN.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_clamp_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  const bool has_lo = !ctx.is_none(1);
  const bool has_hi = !ctx.is_none(2);
  const float lo = has_lo ? static_cast<float>(ctx.scalar_arg(1)) : 0.0f;
  const float hi = has_hi ? static_cast<float>(ctx.scalar_arg(2)) : 0.0f;
  if (has_lo && has_hi) {
    return unary_float(in, out, [lo, hi](float x) {
      const float y = x < lo ? lo : x;
      return y > hi ? hi : y;
    });
  }
  if (has_lo) return unary_float(in, out, [lo](float x) { return x < lo ? lo : x; });
  if (has_hi) return unary_float(in, out, [hi](float x) { return x > hi ? hi : x; });
  return unary_float(in, out, [](float x) { return x; });
}

}  // namespace kernels
}  // namespace mcu
