// mcu-gen-kernel: op=aten::sinh.out fn=aten_sinh_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::sinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = sinhf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_sinh_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_sinh_out>(ctx, [](float x) { return sinhf(x); });
}

}  // namespace kernels
}  // namespace mcu
