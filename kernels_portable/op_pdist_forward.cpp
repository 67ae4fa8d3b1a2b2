// mcu-gen-kernel: op=aten::_pdist_forward.out fn=aten_pdist_forward_out sig=TDOO dtypes=float32
// aten::_pdist_forward.out(Tensor self, float p=2, *, Tensor(a!) out) -> Tensor(a!)
// F.pdist: self [N, M] -> out [N (N - 1) / 2], the p-norm distances of rows i < j in row-major
// order of (i, j) (shape_common.h: p_distance). p must be >= 0.
#include <stddef.h>

#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_pdist_forward_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const float p = static_cast<float>(ctx.double_arg(1));
  const TensorRef out = ctx.tensor(2);
  if (!is_float(in) || !is_float(out) || !in.is_contiguous() || !out.is_contiguous() || !(p >= 0.0f))
    return Error::KernelFailed;
  if (in.dim != 2 || out.dim != 1) return Error::KernelFailed;
  const int32_t n = in.sizes[0], m = in.sizes[1];
  const int64_t pairs = static_cast<int64_t>(n) * (n - 1) / 2;
  if (out.sizes[0] != pairs) return Error::KernelFailed;
  const float* x = in.f32();
  float* y = out.f32();
  int32_t k = 0;
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = i + 1; j < n; ++j) {
      y[k++] = p_distance(x + static_cast<size_t>(i) * m, x + static_cast<size_t>(j) * m, m, p);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
