// Shared by the scatter kernels (scatter.src, scatter.value, scatter_add):
// ATen's shape rules and the walk over the index tensor. out starts as a copy
// of self; then, for every position p of `index`, out at p with dim replaced by
// index[p] receives src at p (or the value). Every index is checked against
// self's size along dim: as in ATen, scatter takes no negative index; outside
// [0, size) fails the kernel before any element is scattered.
#pragma once
#include <stdint.h>
#include <string.h>

#include "elementwise_common.h"
#include "index_common.h"

namespace mcu {
namespace kernels {

// Size of t along d, a 0-dim tensor counting as one dim of size 1 (ATen's
// ensure_nonempty_size).
inline int32_t nonempty_size(const TensorRef& t, int32_t d) { return t.dim == 0 ? 1 : t.sizes[d]; }
inline int32_t nonempty_dim(const TensorRef& t) { return t.dim == 0 ? 1 : t.dim; }

// One scatter instruction, checked: self, out (self's shape and dtype), index
// (int32/int64), and src when present (self's dtype; nullptr for a value).
struct Scatter {
  TensorRef self, index, out;
  const TensorRef* src = nullptr;
  int32_t dim = 0;
  int32_t out_stride[kMaxDims] = {};
  int32_t src_stride[kMaxDims] = {};

  bool init(const KernelContext& ctx, int32_t out_arg, const TensorRef* source) {
    self = ctx.tensor(0);
    index = ctx.tensor(2);
    out = ctx.tensor(out_arg);
    src = source;
    if (!wrap_dim(ctx.int_arg(1), self.dim, &dim) || !is_index_dtype(index.dtype)) return false;
    if (!copyable_pair(self, out) || !self.same_shape(out) || !index.is_contiguous()) return false;
    if (src != nullptr && (src->dtype != self.dtype || !src->is_contiguous())) return false;
    if (self.dim > kMaxDims) return false;
    if (index.numel == 0) return true;  // nothing scattered: out = self, whatever the shapes
    const int32_t n = nonempty_dim(self);
    if (nonempty_dim(index) != n || (src != nullptr && nonempty_dim(*src) != n)) return false;
    for (int32_t d = 0; d < n; ++d) {
      const int32_t k = nonempty_size(index, d);
      if (d != dim && k > nonempty_size(self, d)) return false;
      if (src != nullptr && k > nonempty_size(*src, d)) return false;
    }
    if (self.dim > 0) contiguous_strides(self.sizes, self.dim, out_stride);
    else out_stride[0] = 1;
    if (src != nullptr && src->dim > 0) contiguous_strides(src->sizes, src->dim, src_stride);
    else src_stride[0] = 1;
    return true;
  }

  // out = self (nothing to do when the plan put them at one address).
  void copy_self() const { move_bytes(out.data, self.data, out.nbytes()); }

  // Checks every index first (so that a bad one fails before out changes
  // beyond its copy of self), then calls f(out_offset, src_offset) for each
  // position of index in order (element offsets).
  template <typename F>
  bool for_each(F f) const {
    const int64_t size = nonempty_size(self, dim);
    for (int32_t i = 0; i < index.numel; ++i) {
      const int64_t v = index_at(index, i);
      if (v < 0 || v >= size) return false;
    }
    const int32_t n = index.dim;
    int32_t pos[kMaxDims] = {};
    for (int32_t i = 0; i < index.numel; ++i) {
      const int32_t p = static_cast<int32_t>(index_at(index, i));
      int32_t o = 0, s = 0;
      for (int32_t d = 0; d < n; ++d) {
        o += (d == dim ? p : pos[d]) * out_stride[d];
        s += pos[d] * src_stride[d];
      }
      if (n == 0) o = p * out_stride[0];
      f(o, s);
      for (int32_t d = n - 1; d >= 0; --d) {
        if (++pos[d] < index.sizes[d]) break;
        pos[d] = 0;
      }
    }
    return true;
  }
};

}  // namespace kernels
}  // namespace mcu
