// mcu-gen-kernel: op=aten::atan.out fn=aten_atan_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::atan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = atanf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_atan_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_atan_out>(ctx, [](float x) { return atanf(x); });
}

}  // namespace kernels
}  // namespace mcu
