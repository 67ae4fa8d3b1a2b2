// mcu-gen-kernel: op=aten::rsub.Scalar_out fn=aten_rsub_scalar_out sig=TSSOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)
// out = other - alpha * self, in the dtype self and other promote to.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_rsub_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_rsub_scalar_out & kRealTypes;
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  const Scalar alpha = ctx.scalar(2);
  return map_elementwise<kSet>(ctx.tensor(3), result_type(a, s), [s, alpha](auto x) {
    using C = decltype(x);
    return wrapping_sub(scalar_as<C>(s), wrapping_mul(scalar_as<C>(alpha), x));
  }, a);
}

}  // namespace kernels
}  // namespace mcu
