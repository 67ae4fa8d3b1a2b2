// mcu-gen-kernel: op=aten::acosh.out fn=aten_acosh_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::acosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = acoshf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_acosh_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_acosh_out>(ctx, [](float x) { return acoshf(x); });
}

}  // namespace kernels
}  // namespace mcu
