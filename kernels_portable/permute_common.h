// A copy of a contiguous tensor with its dims reordered: out dim i is in dim
// perm[i] (permute_copy, transpose_copy, t_copy).
#pragma once
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// perm: in.dim entries, already wrapped; checks that perm is a permutation and
// out's sizes, and refuses in place (a reorder cannot be).
inline Error permuted_copy(const TensorRef& in, const TensorRef& out, const int32_t* perm) {
  if (!copyable_pair(in, out) || out.dim != in.dim) return Error::KernelFailed;
  if (in.data == out.data && in.numel > 1) return Error::KernelFailed;  // cannot permute in place
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t src_strides[kMaxDims];
  bool used[kMaxDims] = {};
  for (int32_t i = 0; i < in.dim; ++i) {
    const int32_t d = perm[i];
    if (d < 0 || d >= in.dim || used[d] || out.sizes[i] != in.sizes[d]) return Error::KernelFailed;
    used[d] = true;
    src_strides[i] = in_strides[d];
  }
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  strided_copy(out.data, out_strides, in.data, src_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

// The identity permutation with dims a and b swapped (a, b < ndim <= kMaxDims).
inline void swap_permutation(int32_t ndim, int32_t a, int32_t b, int32_t* perm) {
  for (int32_t i = 0; i < ndim; ++i) perm[i] = i;
  perm[a] = b;
  perm[b] = a;
}

}  // namespace kernels
}  // namespace mcu
