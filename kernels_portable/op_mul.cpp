// mcu-gen-kernel: op=aten::mul.out fn=aten_mul_out sig=TTOO dtypes=float32 inplace=0,1
// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
// out = self * other, with NumPy broadcasting.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_mul_out(const KernelContext& ctx) {
  return binary_float(ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), [](float a, float b) { return a * b; });
}

}  // namespace kernels
}  // namespace mcu
