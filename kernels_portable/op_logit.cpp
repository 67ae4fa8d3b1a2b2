// mcu-gen-kernel: op=aten::logit.out fn=aten_logit_out sig=TdOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::logit.out(Tensor self, float? eps=None, *, Tensor(a!) out) -> Tensor(a!)
// out = log(z / (1 - z)), z = self clamped to [eps, 1 - eps] when eps is given; float32 out.
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_logit_out(const KernelContext& ctx) {
  if (ctx.is_none(1)) return unary_to_float<selected::aten_logit_out>(ctx.tensor(0), ctx.tensor(2), [](float x) { return logf(x / (1.0f - x)); });
  const float lo = static_cast<float>(ctx.double_arg(1));
  const float hi = 1.0f - lo;
  return unary_to_float<selected::aten_logit_out>(ctx.tensor(0), ctx.tensor(2), [lo, hi](float x) {
    const float z = x < lo ? lo : x > hi ? hi : x;  // NaN stays NaN
    return logf(z / (1.0f - z));
  });
}

}  // namespace kernels
}  // namespace mcu
