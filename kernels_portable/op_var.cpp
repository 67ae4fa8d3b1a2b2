// mcu-gen-kernel: op=aten::var.out fn=aten_var_out sig=TlBBOO dtypes=float32
// aten::var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_var_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  return reduce_var(in, ctx.tensor(4), reduced_dims(ctx, 1, in.dim), ctx.bool_arg(3), ctx.bool_arg(2) ? 1.0f : 0.0f);
}

}  // namespace kernels
}  // namespace mcu
