// mcu-gen-kernel: op=aten::round.out fn=aten_round_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::round.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = self rounded to the nearest integer, halves to even; integers unchanged.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_round_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_round_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return __builtin_rintf(x);
    else return x;
  }, in);
}

}  // namespace kernels
}  // namespace mcu
