// mcu-gen-kernel: op=aten::_log_softmax.out fn=aten_log_softmax_out sig=TIBOO dtypes=float32
// aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
// out = (x - max) - log(sum(exp(x - max))) along `dim` (negative counts from the end).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "softmax_common.h"

namespace mcu {
namespace kernels {

Error aten_log_softmax_out(const KernelContext& ctx) {
  return for_each_softmax_row(ctx, [](const float* x, float* y, int32_t n, int32_t stride, float max) {
    float sum = 0.0f;
    for (int32_t k = 0; k < n; ++k) sum += expf(x[k * stride] - max);
    const float log_sum = logf(sum);
    for (int32_t k = 0; k < n; ++k) y[k * stride] = (x[k * stride] - max) - log_sum;  // written last
  });
}

}  // namespace kernels
}  // namespace mcu
