// mcu-gen-kernel: op=aten::signbit.out fn=aten_signbit_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::signbit.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = whether self's sign bit is set, bool: true for -0.0 and negative NaN; x < 0 for signed integers,
// false for uint8 and bool.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_signbit_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_signbit_out | dtype_bit(DType::Bool)) & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (out.dtype != DType::Bool) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return static_cast<bool>(signbit(x));
    else if constexpr (is_signed_c<C>()) return x < C(0);
    else return (void)x, false;
  }, in);
}

}  // namespace kernels
}  // namespace mcu
