// mcu-gen-kernel: op=aten::pow.Tensor_Tensor_out fn=aten_pow_tensor_tensor_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::pow.Tensor_Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = self ** exponent, broadcast; integers by repeated squaring (wrapping).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_pow_tensor_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_pow_tensor_tensor_out & kRealTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  DType compute = result_type(a, b);
  return map_elementwise<kSet>(ctx.tensor(2), compute, [](auto x, auto y) {
    return power(x, y);
  }, a, b);
}

}  // namespace kernels
}  // namespace mcu
