// mcu-gen-kernel: op=aten::_cdist_forward.out fn=aten_cdist_forward_out sig=TTDiOO dtypes=float32
// aten::_cdist_forward.out(Tensor x1, Tensor x2, float p, int? compute_mode, *, Tensor(a!) out)
//     -> Tensor(a!)
// torch.cdist: x1 [..., P, M], x2 [..., R, M] -> out [..., P, R], out[b, i, j] the p-norm
// distance of row i of x1 and row j of x2 (shape_common.h: p_distance); the batch dims
// broadcast. Computed directly for every p (ATen's CPU kernel may use x1 x2^T for p = 2 when
// compute_mode allows; the results agree within float rounding). p must be >= 0.
#include <stddef.h>

#include "shape_common.h"

namespace mcu {
namespace kernels {

namespace {

// Offset (in rows-blocks) of batch index b of `out`'s batch dims in t's batch dims (broadcast).
int32_t batch_offset(const TensorRef& t, const TensorRef& out, int32_t b) {
  const int32_t out_batch = out.dim - 2, t_batch = t.dim - 2;
  int32_t offset = 0, stride = 1;
  for (int32_t d = out_batch - 1; d >= 0; --d) {
    const int32_t index = b % out.sizes[d];
    b /= out.sizes[d];
    const int32_t td = d - (out_batch - t_batch);
    if (td < 0) continue;
    const int32_t n = t.sizes[td];
    if (n != 1) offset += index * stride;
    stride *= n;
  }
  return offset;
}

}  // namespace

Error aten_cdist_forward_out(const KernelContext& ctx) {
  const TensorRef x1 = ctx.tensor(0);
  const TensorRef x2 = ctx.tensor(1);
  const float p = static_cast<float>(ctx.double_arg(2));
  const TensorRef out = ctx.tensor(4);
  if (!is_float(x1) || !is_float(x2) || !is_float(out) || !(p >= 0.0f)) return Error::KernelFailed;
  if (!x1.is_contiguous() || !x2.is_contiguous() || !out.is_contiguous()) return Error::KernelFailed;
  if (x1.dim < 2 || x2.dim < 2 || out.dim != (x1.dim > x2.dim ? x1.dim : x2.dim)) return Error::KernelFailed;
  const int32_t rows1 = x1.sizes[x1.dim - 2], rows2 = x2.sizes[x2.dim - 2], m = x1.sizes[x1.dim - 1];
  if (x2.sizes[x2.dim - 1] != m || out.sizes[out.dim - 2] != rows1 || out.sizes[out.dim - 1] != rows2)
    return Error::KernelFailed;
  for (int32_t d = 0; d < out.dim - 2; ++d) {  // batch dims: broadcast of x1's and x2's
    const int32_t d1 = d - (out.dim - x1.dim), d2 = d - (out.dim - x2.dim);
    const int32_t n1 = d1 >= 0 ? x1.sizes[d1] : 1, n2 = d2 >= 0 ? x2.sizes[d2] : 1;
    if ((n1 != n2 && n1 != 1 && n2 != 1) || out.sizes[d] != (n1 == 1 ? n2 : n1)) return Error::KernelFailed;
  }
  const int32_t batches = size_product(out, 0, out.dim - 2);
  const float* a = x1.f32();
  const float* b = x2.f32();
  float* y = out.f32();
  for (int32_t k = 0; k < batches; ++k) {
    const float* a0 = a + static_cast<size_t>(batch_offset(x1, out, k)) * rows1 * m;
    const float* b0 = b + static_cast<size_t>(batch_offset(x2, out, k)) * rows2 * m;
    float* yk = y + static_cast<size_t>(k) * rows1 * rows2;
    for (int32_t i = 0; i < rows1; ++i) {
      for (int32_t j = 0; j < rows2; ++j) {
        yk[static_cast<size_t>(i) * rows2 + j] =
            p_distance(a0 + static_cast<size_t>(i) * m, b0 + static_cast<size_t>(j) * m, m, p);
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
