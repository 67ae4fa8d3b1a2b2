// mcu-gen-kernel: op=aten::atanh.out fn=aten_atanh_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::atanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = atanhf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_atanh_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_atanh_out>(ctx, [](float x) { return atanhf(x); });
}

}  // namespace kernels
}  // namespace mcu
