// mcu-gen-kernel: op=aten::rsqrt.out fn=aten_rsqrt_out sig=TOO dtypes=float32 inplace=0
// aten::rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = 1 / sqrt(self) (inf at 0, NaN below 0, as in ATen); integer and bool
// inputs are computed in float, out must be float.
#include <math.h>

#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_rsqrt_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_rsqrt_out & kAllTypes) | kFloatTypes;
  const TensorRef out = ctx.tensor(1);
  if (out.dtype != DType::Float) return Error::KernelFailed;
  return map_elementwise<kSet>(out, DType::Float, [](auto x) { return 1.0f / sqrtf(static_cast<float>(x)); },
                               ctx.tensor(0));
}

}  // namespace kernels
}  // namespace mcu
