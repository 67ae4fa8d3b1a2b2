// mcu-gen-kernel: op=aten::_softmax.out fn=aten_softmax_out sig=TIBOO dtypes=float32
// aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
// out = exp(x - max) / sum(exp(x - max)) along `dim` (negative counts from the end).
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_softmax_out(const KernelContext& ctx) {
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
  // Each row is read before it is written at the same index, so out may alias self.
  for (int32_t o = 0; o < outer; ++o) {
    for (int32_t i = 0; i < inner; ++i) {
      const int32_t base = o * n * inner + i;
      float max = x[base];
      for (int32_t k = 1; k < n; ++k) {
        const float v = x[base + k * inner];
        if (v > max) max = v;
      }
      float sum = 0.0f;
      for (int32_t k = 0; k < n; ++k) {
        const float e = expf(x[base + k * inner] - max);
        y[base + k * inner] = e;
        sum += e;
      }
      const float scale = 1.0f / sum;
      for (int32_t k = 0; k < n; ++k) y[base + k * inner] *= scale;
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
