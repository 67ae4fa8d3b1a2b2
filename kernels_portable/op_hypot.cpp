// mcu-gen-kernel: op=aten::hypot.out fn=aten_hypot_out sig=TTOO dtypes=float32 inplace=0
// aten::hypot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = sqrt(self^2 + other^2) without overflow in between (hypotf), broadcast. Floating point only, as in ATen.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_hypot_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_hypot_out & kFloatTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  if (result_type(a, b) != DType::Float) return Error::KernelFailed;
  return map_elementwise<kSet>(ctx.tensor(2), DType::Float, [](float x, float y) { return hypotf(x, y); }, a, b);
}

}  // namespace kernels
}  // namespace mcu
