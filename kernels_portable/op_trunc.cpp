// mcu-gen-kernel: op=aten::trunc.out fn=aten_trunc_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::trunc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = self rounded toward zero; integers unchanged.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_trunc_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_trunc_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return truncf(x);
    else return x;
  }, in);
}

}  // namespace kernels
}  // namespace mcu
