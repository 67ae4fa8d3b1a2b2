// mcu-gen-kernel: op=aten::mul.Scalar_out fn=aten_mul_scalar_out sig=TSOO dtypes=float32 inplace=0
// aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// out = self * other.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_mul_scalar_out(const KernelContext& ctx) {
  const float b = static_cast<float>(ctx.scalar_arg(1));
  return unary_float(ctx.tensor(0), ctx.tensor(2), [b](float a) { return a * b; });
}

}  // namespace kernels
}  // namespace mcu
