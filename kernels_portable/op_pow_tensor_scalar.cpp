// mcu-gen-kernel: op=aten::pow.Tensor_Scalar_out fn=aten_pow_tensor_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::pow.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = self ** exponent (a Scalar).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_pow_tensor_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_pow_tensor_scalar_out & kAllTypes;
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  DType compute = result_type(a, s);
  return map_elementwise<kSet>(ctx.tensor(2), compute, [s](auto x) {
    using C = decltype(x);
    const C y = scalar_as<C>(s);
    return power(x, y);
  }, a);
}

}  // namespace kernels
}  // namespace mcu
