// mcu-gen-kernel: op=aten::hardsigmoid.out fn=aten_hardsigmoid_out sig=TOO dtypes=float32 inplace=0
// aten::hardsigmoid.out(Tensor self, *, Tensor(a!) out)
// out = min(max(self + 3, 0), 6) / 6.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_hardsigmoid_out(const KernelContext& ctx) {
  return unary_float(ctx.tensor(0), ctx.tensor(1), [](float x) {
    float r = x + 3.0f;
    r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
    return r / 6.0f;
  });
}

}  // namespace kernels
}  // namespace mcu
