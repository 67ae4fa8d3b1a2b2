// mcu-gen-kernel: op=aten::elu.out fn=aten_elu_out sig=TSSSOO dtypes=float32 inplace=0
// aten::elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *,
//     Tensor(a!) out) -> Tensor(a!)
// out = x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale (F.elu, and F.selu with
// alpha = 1.6732632, scale = 1.0507010).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_elu_out(const KernelContext& ctx) {
  const float scale = static_cast<float>(ctx.scalar_arg(2));
  const float neg_scale = static_cast<float>(ctx.scalar_arg(1)) * scale;
  const float input_scale = static_cast<float>(ctx.scalar_arg(3));
  return unary_float(ctx.tensor(0), ctx.tensor(4), [=](float x) {
    return x > 0.0f ? x * scale : expm1f(x * input_scale) * neg_scale;
  });
}

}  // namespace kernels
}  // namespace mcu
