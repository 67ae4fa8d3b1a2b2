// mcu-gen-kernel: op=aten::hardtanh.out fn=aten_hardtanh_out sig=TSSOO dtypes=float32 inplace=0
// aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
// out = min(max(self, min_val), max_val); NaN stays NaN.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_hardtanh_out(const KernelContext& ctx) {
  const float lo = static_cast<float>(ctx.scalar_arg(1));
  const float hi = static_cast<float>(ctx.scalar_arg(2));
  return unary_float(ctx.tensor(0), ctx.tensor(3), [lo, hi](float x) {
    const float y = x < lo ? lo : x;
    return y > hi ? hi : y;
  });
}

}  // namespace kernels
}  // namespace mcu
