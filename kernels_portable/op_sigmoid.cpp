// mcu-gen-kernel: op=aten::sigmoid.out fn=aten_sigmoid_out sig=TOO dtypes=float32 inplace=0
// aten::sigmoid.out(Tensor self, *, Tensor(a!) out)
// out = 1 / (1 + exp(-self)).
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_sigmoid_out(const KernelContext& ctx) {
  return unary_float(ctx.tensor(0), ctx.tensor(1), [](float x) { return 1.0f / (1.0f + expf(-x)); });
}

}  // namespace kernels
}  // namespace mcu
