// mcu-gen-kernel: op=aten::minimum.out fn=aten_minimum_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = min(self, other), broadcast, promoted; NaN if either is NaN.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_minimum_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_minimum_out & kAllTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  DType compute = result_type(a, b);
  return map_elementwise<kSet>(ctx.tensor(2), compute, [](auto x, auto y) {
    return minimum_of(x, y);
  }, a, b);
}

}  // namespace kernels
}  // namespace mcu
