// mcu-gen-kernel: op=aten::fmod.Scalar_out fn=aten_fmod_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = fmod(self, other) (sign of self); integer % 0 fails.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_fmod_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_fmod_scalar_out & kRealTypes;
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  DType compute = result_type(a, s);
  Status st;
  const Error e = map_elementwise<kSet>(ctx.tensor(2), compute, [&st, s](auto x) {
    using C = decltype(x);
    const C y = scalar_as<C>(s);
    return fmod_of(x, y, st);
  }, a);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
