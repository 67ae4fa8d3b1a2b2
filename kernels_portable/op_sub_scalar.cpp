// mcu-gen-kernel: op=aten::sub.Scalar_out fn=aten_sub_scalar_out sig=TSSOO dtypes=float32 inplace=0
// aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
// out = self - alpha * other.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_sub_scalar_out(const KernelContext& ctx) {
  const float other = static_cast<float>(ctx.scalar_arg(1));
  const float alpha = static_cast<float>(ctx.scalar_arg(2));
  const float b = alpha * other;
  return unary_float(ctx.tensor(0), ctx.tensor(3), [b](float a) { return a - b; });
}

}  // namespace kernels
}  // namespace mcu
