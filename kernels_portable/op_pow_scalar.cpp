// mcu-gen-kernel: op=aten::pow.Scalar_out fn=aten_pow_scalar_out sig=STOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
// out = self ** exponent, the Scalar base promoted with the exponent tensor.
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_pow_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_pow_scalar_out & kRealTypes;
  const Scalar s = ctx.scalar(0);
  const TensorRef e = ctx.tensor(1);
  return map_elementwise<kSet>(ctx.tensor(2), result_type(e, s), [s](auto y) {
    using C = decltype(y);
    return power(scalar_as<C>(s), y);
  }, e);
}

}  // namespace kernels
}  // namespace mcu
