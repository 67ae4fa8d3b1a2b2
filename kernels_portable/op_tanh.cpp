// mcu-gen-kernel: op=aten::tanh.out fn=aten_tanh_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::tanh.out(Tensor self, *, Tensor(a!) out)
// out = tanh(self); integer and bool self give a float out (ATen).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_common.h"
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_tanh_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_tanh_out & kAllTypes;
  const auto tanh_of = [](float x) { return tanhf(x); };
  // A float-only program compiles the float loop alone.
  if (kSet == kFloatTypes || is_float(ctx.tensor(0))) return unary_float(ctx.tensor(0), ctx.tensor(1), tanh_of);
  if constexpr (kSet != kFloatTypes) return unary_to_float<kSet>(ctx, tanh_of);
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
