// mcu-gen-kernel: op=mcu::linear.out fn=mcu_linear_out sig=TTtDDOO dtypes=float32
//
// mcu::linear.out(Tensor input, Tensor weight, Tensor? bias, float out_min,
//     float out_max, *, Tensor(a!) out) -> Tensor(a!)
// A linear layer with a fused clamp; weight [out, in] read row by row.
#include "f32_matrix.h"

namespace mcu::kernels {

Error mcu_linear_out(const KernelContext& ctx) {
  const float lo = static_cast<float>(ctx.double_arg(3));
  const float hi = static_cast<float>(ctx.double_arg(4));
  if (lo > hi) return Error::KernelFailed;
  return run_linear(ctx, 5, lo, hi);
}

}  // namespace mcu::kernels
