// mcu-gen-kernel: op=aten::cos.out fn=aten_cos_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = cosf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_cos_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_cos_out>(ctx, [](float x) { return cosf(x); });
}

}  // namespace kernels
}  // namespace mcu
