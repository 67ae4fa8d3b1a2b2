// mcu-gen-kernel: op=aten::remainder.Scalar_out fn=aten_remainder_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = self % other, Python's sign rule; integer % 0 fails.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_remainder_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_remainder_scalar_out & kRealTypes;
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  DType compute = result_type(a, s);
  Status st;
  const Error e = map_elementwise<kSet>(ctx.tensor(2), compute, [&st, s](auto x) {
    using C = decltype(x);
    const C y = scalar_as<C>(s);
    return remainder_of(x, y, st);
  }, a);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
