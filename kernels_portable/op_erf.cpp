// mcu-gen-kernel: op=aten::erf.out fn=aten_erf_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::erf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = erff(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_erf_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_erf_out>(ctx, [](float x) { return erff(x); });
}

}  // namespace kernels
}  // namespace mcu
