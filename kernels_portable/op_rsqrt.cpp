// mcu-gen-kernel: op=aten::rsqrt.out fn=aten_rsqrt_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = 1.0f / sqrtf(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_rsqrt_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_rsqrt_out>(ctx, [](float x) { return 1.0f / sqrtf(x); });
}

}  // namespace kernels
}  // namespace mcu
