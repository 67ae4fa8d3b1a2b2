// mcu-gen-kernel: op=aten::log1p.out fn=aten_log1p_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::log1p.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = log1pf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_log1p_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_log1p_out>(ctx, [](float x) { return log1pf(x); });
}

}  // namespace kernels
}  // namespace mcu
