// pixel_shuffle / pixel_unshuffle: one strided copy each, the (N, C, r, r, H, W)
// <-> (N, C, H, r, W, r) permutation with every leading batch dim folded into N.
#pragma once
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// shuffle: self (*, C*r*r, H, W) -> out (*, C, H*r, W*r) with
// out[n, c, h*r + i, w*r + j] = self[n, c*r*r + i*r + j, h, w];
// unshuffle (shuffle = false) is the inverse: self (*, C, H*r, W*r) -> out (*, C*r*r, H, W).
inline Error pixel_shuffle_copy(const KernelContext& ctx, bool shuffle) {
  const TensorRef in = ctx.tensor(0);
  const int64_t factor = ctx.int_arg(1);
  const TensorRef out = ctx.tensor(2);
  if (!copyable_pair(in, out) || in.dim < 3 || out.dim != in.dim || factor <= 0) return Error::KernelFailed;
  const int32_t nd = in.dim;
  // The side with r*r channels (deep) and the side with r-times larger H, W (wide).
  const TensorRef& deep = shuffle ? in : out;
  const TensorRef& wide = shuffle ? out : in;
  if (factor > deep.sizes[nd - 3] || factor * factor > deep.sizes[nd - 3]) return Error::KernelFailed;
  const int32_t r = static_cast<int32_t>(factor);
  const int32_t c = deep.sizes[nd - 3] / (r * r), h = deep.sizes[nd - 2], w = deep.sizes[nd - 1];
  if (deep.sizes[nd - 3] != c * r * r) return Error::KernelFailed;
  if (wide.sizes[nd - 3] != c || wide.sizes[nd - 2] != h * r || wide.sizes[nd - 1] != w * r)
    return Error::KernelFailed;
  for (int32_t d = 0; d < nd - 3; ++d) {
    if (in.sizes[d] != out.sizes[d]) return Error::KernelFailed;
  }
  if (out.numel == 0) return Error::Ok;
  if (in.data == out.data) return Error::KernelFailed;
  const int32_t n = size_product(in, 0, nd - 3);
  // Walk the wide tensor as (N, C, H, i, W, j); the deep one is (N, C, i, j, H, W).
  const int32_t sizes[6] = {n, c, h, r, w, r};
  const int32_t plane = h * w;
  const int32_t deep_strides[6] = {c * r * r * plane, r * r * plane, w, r * plane, 1, plane};
  int32_t wide_strides[6];
  contiguous_strides(sizes, 6, wide_strides);
  const size_t esize = element_size(in);
  if (shuffle) strided_copy(out.data, wide_strides, in.data, deep_strides, sizes, 6, esize);
  else strided_copy(out.data, deep_strides, in.data, wide_strides, sizes, 6, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
