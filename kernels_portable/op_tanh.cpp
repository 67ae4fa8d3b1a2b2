// mcu-gen-kernel: op=aten::tanh.out fn=aten_tanh_out sig=TOO dtypes=float32 inplace=0
// aten::tanh.out(Tensor self, *, Tensor(a!) out)
// out = tanh(self).
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_tanh_out(const KernelContext& ctx) {
  return unary_float(ctx.tensor(0), ctx.tensor(1), [](float x) { return tanhf(x); });
}

}  // namespace kernels
}  // namespace mcu
