// mcu-gen-kernel: op=aten::copysign.Scalar_out fn=aten_copysign_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::copysign.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = |self| with the sign of the Scalar other (-0.0 counts as negative); integer and bool inputs are
// computed in float32 (out is float32).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_copysign_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_copysign_scalar_out & kAllTypes) | kFloatTypes;
  const Scalar s = ctx.scalar(1);
  const float sign = s.kind == Scalar::Kind::Double ? static_cast<float>(s.d) : static_cast<float>(s.i);
  const TensorRef out = ctx.tensor(2);
  if (out.dtype != DType::Float) return Error::KernelFailed;
  return map_elementwise<kSet>(out, DType::Float, [sign](auto x) {
    return static_cast<decltype(x)>(copysignf(static_cast<float>(x), sign));
  }, ctx.tensor(0));
}

}  // namespace kernels
}  // namespace mcu
