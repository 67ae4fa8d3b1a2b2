// mcu-gen-kernel: op=aten::log.out fn=aten_log_out sig=TOO dtypes=float32 inplace=0
// aten::log.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = ln(self); integer and bool inputs are computed in float (ATen's
// int-to-float promotion), out must be float.
#include <math.h>

#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_log_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_log_out & kAllTypes) | kFloatTypes;
  const TensorRef out = ctx.tensor(1);
  if (out.dtype != DType::Float) return Error::KernelFailed;
  return map_elementwise<kSet>(out, DType::Float, [](auto x) { return logf(static_cast<float>(x)); }, ctx.tensor(0));
}

}  // namespace kernels
}  // namespace mcu
