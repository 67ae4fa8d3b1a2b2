// mcu-gen-kernel: op=aten::log2.out fn=aten_log2_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::log2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = log2f(self); integer and bool inputs are computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_log2_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_log2_out>(ctx, [](float x) { return log2f(x); });
}

}  // namespace kernels
}  // namespace mcu
