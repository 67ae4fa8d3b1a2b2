// mcu-gen-kernel: op=aten::leaky_relu.out fn=aten_leaky_relu_out sig=TSOO dtypes=float32 inplace=0
// aten::leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out)
// out = self > 0 ? self : self * negative_slope.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_leaky_relu_out(const KernelContext& ctx) {
  const float slope = static_cast<float>(ctx.scalar_arg(1));
  return unary_float(ctx.tensor(0), ctx.tensor(2), [slope](float x) { return x > 0.0f ? x : x * slope; });
}

}  // namespace kernels
}  // namespace mcu
