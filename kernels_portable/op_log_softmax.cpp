// mcu-gen-kernel: op=aten::_log_softmax.out fn=aten_log_softmax_out sig=TIBOO dtypes=float32
// aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
// out = (x - max) - log(sum(exp(x - max))) along `dim` (negative counts from the end).
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_log_softmax_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &dim) || ctx.bool_arg(2)) return Error::KernelFailed;
  if (!is_float(in) || !same_layout(in, out) || !in.is_contiguous()) return Error::KernelFailed;
  if (in.numel == 0) return Error::Ok;
  const int32_t n = in.dim > 0 ? in.sizes[dim] : 1;
  const int32_t inner = size_product(in, dim + 1, in.dim);
  const int32_t outer = size_product(in, 0, dim);
  const float* x = in.f32();
  float* y = out.f32();
  // The row is only written in the last pass, so out may alias self.
  for (int32_t o = 0; o < outer; ++o) {
    for (int32_t i = 0; i < inner; ++i) {
      const int32_t base = o * n * inner + i;
      float max = x[base];
      for (int32_t k = 1; k < n; ++k) {
        const float v = x[base + k * inner];
        if (v > max) max = v;
      }
      float sum = 0.0f;
      for (int32_t k = 0; k < n; ++k) sum += expf(x[base + k * inner] - max);
      const float log_sum = logf(sum);
      for (int32_t k = 0; k < n; ++k) y[base + k * inner] = (x[base + k * inner] - max) - log_sum;
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
