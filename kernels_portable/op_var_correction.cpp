// mcu-gen-kernel: op=aten::var.correction_out fn=aten_var_correction_out sig=TlsBOO dtypes=float32
// aten::var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//     bool keepdim=False, Tensor(a!) out) -> Tensor(a!)
// Variance over `dim` (None or []: all dims) with divisor N - correction
// (None: 1); two passes (mean, then squared deviations), as ATen's CPU kernel
// is numerically. N - correction <= 0 gives inf/NaN as in ATen.
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_var_correction_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const float correction = ctx.is_none(2) ? 1.0f : ctx.scalar(2).as<float>();
  return reduce_var(in, ctx.tensor(4), reduced_dims(ctx, 1, in.dim), ctx.bool_arg(3), correction);
}

}  // namespace kernels
}  // namespace mcu
