// mcu-gen-kernel: op=aten::reciprocal.out fn=aten_reciprocal_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::reciprocal.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = 1.0f / self; integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_reciprocal_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_reciprocal_out>(ctx, [](float x) { return 1.0f / x; });
}

}  // namespace kernels
}  // namespace mcu
