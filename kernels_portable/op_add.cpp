// mcu-gen-kernel: op=aten::add.out fn=aten_add_out sig=TTSOO dtypes=float32 inplace=0,1
// aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
// out = self + alpha * other, with NumPy broadcasting.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_add_out(const KernelContext& ctx) {
  const float alpha = static_cast<float>(ctx.scalar_arg(2));
  return binary_float(ctx.tensor(0), ctx.tensor(1), ctx.tensor(3), [alpha](float a, float b) { return a + alpha * b; });
}

}  // namespace kernels
}  // namespace mcu
