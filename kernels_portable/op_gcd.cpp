// mcu-gen-kernel: op=aten::gcd.out fn=aten_gcd_out sig=TTOO dtypes=uint8,int8,int16,int32,int64 inplace=0
// aten::gcd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = the greatest common divisor of |self| and |other| (Euclid's, as ATen: gcd(0, 0) = 0, and the lowest
// value's absolute value wraps to itself), broadcast, in the promoted integer dtype.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_gcd_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_gcd_out & kIntTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  return map_elementwise<kSet>(ctx.tensor(2), result_type(a, b), [](auto x, auto y) { return gcd_of(x, y); }, a, b);
}

}  // namespace kernels
}  // namespace mcu
