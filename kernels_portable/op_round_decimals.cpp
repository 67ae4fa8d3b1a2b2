// mcu-gen-kernel: op=aten::round.decimals_out fn=aten_round_decimals_out sig=TIOO dtypes=float32 inplace=0
// aten::round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)
// out = self rounded to `decimals` decimal places as ATen computes it: nearbyint(x * 10^d) / 10^d, or for
// d < 0 nearbyint(x / 10^-d) * 10^-d, halves to even, in float32 (so 2.675 -> 2.68). Floating point only.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

namespace {

// (float)10^n as ATen gets it (std::pow(10, n) in double, then float): exact in double up to 10^22; above that
// the product's rounding errors are far below float's precision (and 10^39 and up is inf in float).
float ten_power(int64_t n) {
  double p = 1.0;
  for (int64_t i = 0; i < n && i < 400; ++i) p *= 10.0;
  return static_cast<float>(p);
}

}  // namespace

Error aten_round_decimals_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_round_decimals_out & kFloatTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  if (in.dtype != DType::Float || out.dtype != DType::Float) return Error::KernelFailed;
  const int64_t decimals = ctx.int_arg(1);
  const bool negative = decimals < 0;
  const float scale = ten_power(negative ? -decimals : decimals);
  return map_elementwise<kSet>(out, DType::Float, [scale, negative](float x) {
    return negative ? __builtin_rintf(x / scale) * scale : __builtin_rintf(x * scale) / scale;
  }, in);
}

}  // namespace kernels
}  // namespace mcu
