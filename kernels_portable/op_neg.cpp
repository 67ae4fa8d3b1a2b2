// mcu-gen-kernel: op=aten::neg.out fn=aten_neg_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = -self (integers wrap around; bool is refused, as in ATen).
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_neg_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_neg_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return -x;
    else return wrapping_neg(x);
  }, in);
}

}  // namespace kernels
}  // namespace mcu
