// mcu-gen-kernel: op=aten::abs.out fn=aten_abs_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = |self|, in self's dtype (the most negative integer stays itself, as in ATen).
#include <math.h>

#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_abs_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_abs_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return fabsf(x);
    else return x < C(0) ? wrapping_neg(x) : x;
  }, in);
}

}  // namespace kernels
}  // namespace mcu
