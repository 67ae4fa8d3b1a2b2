// mcu-gen-kernel: op=aten::logical_not.out fn=aten_logical_not_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::logical_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = (self == 0): true where self is zero (NaN is not zero); out is bool
// or any dtype, as 0 and 1.
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_logical_not_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_logical_not_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  return map_elementwise<kSet>(ctx.tensor(1), in.dtype, [](auto x) { return x == decltype(x)(0); }, in);
}

}  // namespace kernels
}  // namespace mcu
