// mcu-gen-kernel: op=aten::atan2.out fn=aten_atan2_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = atan2(self, other), broadcast, in float32.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_atan2_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_atan2_out & kAllTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  DType compute = result_type(a, b);
  if (compute != DType::Float) compute = DType::Float;  // integers divide in float
  Status st;
  const Error e = map_elementwise<kSet>(ctx.tensor(2), compute, [&st](auto x, auto y) {
    using C = decltype(x);
    return static_cast<C>(atan2f(static_cast<float>(x), static_cast<float>(y)));
  }, a, b);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
