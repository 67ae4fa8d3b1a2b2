// mcu-gen-kernel: op=aten::cosh.out fn=aten_cosh_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::cosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = coshf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_cosh_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_cosh_out>(ctx, [](float x) { return coshf(x); });
}

}  // namespace kernels
}  // namespace mcu
