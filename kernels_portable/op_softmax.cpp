// mcu-gen-kernel: op=aten::_softmax.out fn=aten_softmax_out sig=TIBOO dtypes=float32
// aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
// out = exp(x - max) / sum(exp(x - max)) along `dim` (negative counts from the end).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "softmax_common.h"

namespace mcu {
namespace kernels {

Error aten_softmax_out(const KernelContext& ctx) {
  return for_each_softmax_row(ctx, [](const float* x, float* y, int32_t n, int32_t stride, float max) {
    float sum = 0.0f;
    for (int32_t k = 0; k < n; ++k) {  // each x is read before y at the same index is written
      const float e = expf(x[k * stride] - max);
      y[k * stride] = e;
      sum += e;
    }
    const float scale = 1.0f / sum;
    for (int32_t k = 0; k < n; ++k) y[k * stride] *= scale;
  });
}

}  // namespace kernels
}  // namespace mcu
