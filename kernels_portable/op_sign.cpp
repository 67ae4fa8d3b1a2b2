// mcu-gen-kernel: op=aten::sign.out fn=aten_sign_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::sign.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = -1, 0 or 1 by the sign of self (0 for NaN... as ATen: sign(NaN) is 0); bool stays.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_sign_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_sign_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return static_cast<float>((0.0f < x) - (x < 0.0f));
    else return static_cast<C>((C(0) < x) - (x < C(0)));
  }, in);
}

}  // namespace kernels
}  // namespace mcu
