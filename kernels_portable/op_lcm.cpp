// mcu-gen-kernel: op=aten::lcm.out fn=aten_lcm_out sig=TTOO dtypes=uint8,int8,int16,int32,int64 inplace=0
// aten::lcm.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = the least common multiple, |self / gcd * other| as ATen computes it (0 when gcd is 0; products beyond
// the dtype wrap), broadcast, in the promoted integer dtype.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_lcm_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_lcm_out & kIntTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  Status st;
  const Error e = map_elementwise<kSet>(ctx.tensor(2), result_type(a, b), [&st](auto x, auto y) {
    using C = decltype(x);
    const C g = gcd_of(x, y);
    if (g == C(0)) return C(0);
    return abs_wrapping(wrapping_mul(int_div(x, g, st), y));
  }, a, b);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
