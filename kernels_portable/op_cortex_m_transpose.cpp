// mcu-gen-kernel: op=cortex_m::transpose.out fn=cortex_m_transpose_out sig=TLOO dtypes=int8
//
// cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out)
// out = input.permute(perm) (logical dims; out.size(d) == input.size(perm[d])),
// written in out's dim_order. Any rank up to 8; int8 (1-byte) elements.
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_transpose_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList perm = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (!is_int8(in) || !is_int8(out) || in.dim != out.dim || perm.size() != in.dim) return Error::KernelFailed;
  if (!valid_dim_order(in) || !valid_dim_order(out) || in.data == out.data) return Error::KernelFailed;
  int32_t in_strides[kMaxDims];
  memory_strides(in, in_strides);
  StridedWalk walk;
  walk.init(out);
  uint32_t seen = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    int64_t p = perm[d];
    if (p < 0) p += in.dim;
    if (p < 0 || p >= in.dim || (seen & (1u << p)) != 0) return Error::KernelFailed;
    seen |= 1u << p;
    if (out.size(d) != in.size(static_cast<int32_t>(p))) return Error::KernelFailed;
    walk.stride_a[d] = in_strides[p];
  }
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  if (out.numel == 0) return Error::Ok;
  // Rows along the output's innermost memory dim of more than one element (dims of size 1 after it change
  // nothing): a row is one loop of loads at the input's stride (or one copy), then the walk steps to the next row.
  int32_t p = out.dim - 1;
  while (p > 0 && out.size(walk.order[p]) == 1) --p;
  const int32_t inner = out.dim > 0 ? walk.order[p] : 0;
  const int32_t n = out.dim > 0 ? out.size(inner) : 1;
  const int32_t step = out.dim > 0 ? walk.stride_a[inner] : 0;
  for (int32_t i = 0; i < out.numel; i += n) {
    const int8_t* src = x + walk.offset_a;
    if (step == 1) {
      memcpy(y + i, src, static_cast<size_t>(n));
    } else {
      for (int32_t j = 0; j < n; ++j) y[i + j] = src[j * step];
    }
    if (out.dim > 0) {  // the row's last element, then one step on
      walk.index[inner] = n - 1;
      walk.offset_a += step * (n - 1);
    }
    walk.next();
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
