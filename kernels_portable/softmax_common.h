// Shared by aten::_softmax.out and aten::_log_softmax.out (same schema):
// argument checks and the walk over every row along `dim`.
#pragma once
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// Calls row(x, y, n, stride, max) for every row of `n` values `stride` apart
// along `dim`, where `max` is the row's largest value (for numerical
// stability). `row` must read x[k * stride] before writing y[k * stride], so
// out may alias self.
template <typename Row>
inline Error for_each_softmax_row(const KernelContext& ctx, Row row) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &dim) || ctx.bool_arg(2)) return Error::KernelFailed;
  if (!is_float(in) || !same_layout(in, out) || !in.is_contiguous()) return Error::KernelFailed;
  if (in.numel == 0) return Error::Ok;
  const int32_t n = in.dim > 0 ? in.sizes[dim] : 1;
  const int32_t inner = size_product(in, dim + 1, in.dim);
  const int32_t outer = size_product(in, 0, dim);
  for (int32_t o = 0; o < outer; ++o) {
    for (int32_t i = 0; i < inner; ++i) {
      const int32_t base = o * n * inner + i;
      const float* x = in.f32() + base;
      float max = x[0];
      for (int32_t k = 1; k < n; ++k) {
        if (x[k * inner] > max) max = x[k * inner];
      }
      row(x, out.f32() + base, n, inner, max);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
