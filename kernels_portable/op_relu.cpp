// mcu-gen-kernel: op=aten::relu.out fn=aten_relu_out sig=TOO dtypes=float32 inplace=0
// aten::relu.out(Tensor self, *, Tensor(a!) out)
// out = max(self, 0); NaN stays NaN.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_relu_out(const KernelContext& ctx) {
  return unary_float(ctx.tensor(0), ctx.tensor(1), [](float x) { return x < 0.0f ? 0.0f : x; });
}

}  // namespace kernels
}  // namespace mcu
