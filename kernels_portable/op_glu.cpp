// mcu-gen-kernel: op=aten::glu.out fn=aten_glu_out sig=TIOO dtypes=float32
// aten::glu.out(Tensor self, int dim=-1, *, Tensor(a!) out) -> Tensor(a!)
// F.glu: the input's halves a, b along dim (its size must be even); out = a * sigmoid(b),
// out the input's shape with dim halved.
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stddef.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_glu_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  int32_t d = 0;
  if (!is_float(in) || !is_float(out) || !in.is_contiguous() || !out.is_contiguous()) return Error::KernelFailed;
  if (in.dim == 0 || in.dim != out.dim || !wrap_dim(ctx.int_arg(1), in.dim, &d)) return Error::KernelFailed;
  const int32_t size = in.sizes[d];
  if (size % 2 != 0) return Error::KernelFailed;
  for (int32_t i = 0; i < in.dim; ++i) {
    if (out.sizes[i] != (i == d ? size / 2 : in.sizes[i])) return Error::KernelFailed;
  }
  const int32_t outer = size_product(in, 0, d);
  const int32_t half = (size / 2) * size_product(in, d + 1, in.dim);  // elements of one half
  const float* x = in.f32();
  float* y = out.f32();
  for (int32_t o = 0; o < outer; ++o) {
    const float* a = x + static_cast<size_t>(o) * 2 * half;
    const float* b = a + half;
    float* yo = y + static_cast<size_t>(o) * half;
    for (int32_t i = 0; i < half; ++i) yo[i] = a[i] * (1.0f / (1.0f + expf(-b[i])));
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
