// mcu-gen-kernel: op=aten::copysign.out fn=aten_copysign_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = |self| with the sign of other (-0.0 counts as negative), broadcast; integer and bool inputs are
// computed in float32, as ATen does (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_copysign_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_copysign_out & kAllTypes) | kFloatTypes;
  const TensorRef out = ctx.tensor(2);
  if (out.dtype != DType::Float) return Error::KernelFailed;
  return map_elementwise<kSet>(out, DType::Float, [](auto x, auto y) {
    return static_cast<decltype(x)>(copysignf(static_cast<float>(x), static_cast<float>(y)));
  }, ctx.tensor(0), ctx.tensor(1));
}

}  // namespace kernels
}  // namespace mcu
