// mcu-gen-kernel: op=aten::isnan.out fn=aten_isnan_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::isnan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = isnan(self), bool; always false for integer and bool inputs.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_isnan_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_isnan_out | dtype_bit(DType::Bool)) & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  return map_elementwise<kSet>(ctx.tensor(1), in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, float)) return x != x;
    else return (void)x, false;
  }, in);
}

}  // namespace kernels
}  // namespace mcu
