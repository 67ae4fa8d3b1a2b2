// mcu-gen-kernel: op=aten::sigmoid.out fn=aten_sigmoid_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::sigmoid.out(Tensor self, *, Tensor(a!) out)
// out = 1 / (1 + exp(-self)); integer and bool self give a float out (ATen).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_common.h"
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_sigmoid_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_sigmoid_out & kAllTypes;
  const auto sigmoid = [](float x) { return 1.0f / (1.0f + expf(-x)); };
  // A float-only program compiles the float loop alone.
  if (kSet == kFloatTypes || is_float(ctx.tensor(0))) return unary_float(ctx.tensor(0), ctx.tensor(1), sigmoid);
  if constexpr (kSet != kFloatTypes) return unary_to_float<kSet>(ctx, sigmoid);
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
