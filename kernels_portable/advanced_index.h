// Advanced indexing, shared by aten::index.Tensor_out and aten::index_put.out:
// self[indices] where `indices` is a Tensor?[] (signature 'Q'), one entry per
// dim of self from the first:
//   - None keeps that dim whole (a full slice `:`);
//   - an int32/int64 tensor picks positions along one dim (negative counts from
//     the end, anything outside [-size, size) fails the call);
//   - a bool mask of m dims picks its true elements over the next m dims (its
//     sizes must be those dims'); it acts as m index tensors of shape [count].
// Dims past the list are kept whole. The index tensors broadcast together to a
// shape B. The result (R) is B in place of the indexed dims when those dims are
// adjacent in self, else B first and the kept dims after it, in order (PyTorch's
// rule). E.g. self [2, 3, 4, 5]: [None, i, j] with i, j of shape [6] gives
// [2, 6, 5]; [i, None, j] gives [6, 3, 5].
//
// AdvancedIndex::init reads the list and computes R; for_each walks R in
// row-major order and gives, per element, its offset in self (the index tensors
// read and range-checked as it goes), its offset in a tensor broadcast to R
// (index_put's values) and its position in R. No heap: everything lives in
// the object (about 0.5 KB of stack).
#pragma once
#include <stdint.h>

#include "dtype_util.h"
#include "elementwise_common.h"
#include "index_common.h"

namespace mcu {
namespace kernels {

class AdvancedIndex {
 public:
  // Reads the index list, argument `arg` of ctx, against `self` (contiguous).
  // False when an entry is not None or a contiguous int32/int64/bool tensor, a
  // mask's sizes differ from the dims it covers, the entries cover more dims
  // than self has, none is a tensor, the index tensors do not broadcast, or
  // the result would have more than kMaxDims dims.
  bool init(const KernelContext& ctx, int32_t arg, const TensorRef& self) {
    if (!self.is_contiguous() || self.dim > kMaxDims) return false;
    int32_t self_stride[kMaxDims];
    contiguous_strides(self.sizes, self.dim, self_stride);
    bool indexed[kMaxDims] = {};
    const int32_t entries = ctx.list_size(arg);
    int32_t d = 0;  // the first dim of self the next entry applies to
    num_sources_ = 0;
    for (int32_t k = 0; k < entries; ++k) {
      TensorRef t;
      if (!ctx.list_tensor_or_none(arg, k, &t)) {
        if (d >= self.dim) return false;
        ++d;
        continue;
      }
      if (!t.is_contiguous() || num_sources_ >= kMaxDims) return false;
      Source& s = sources_[num_sources_++];
      s.data = t.data;
      s.sizes = t.sizes;
      s.dim = t.dim;
      s.dtype = t.dtype;
      if (t.dtype == DType::Bool) {
        // Zero-dim masks (x[True]) add a dim rather than index one: not supported.
        if (t.dim == 0 || d + t.dim > self.dim) return false;
        for (int32_t j = 0; j < t.dim; ++j) {
          if (t.sizes[j] != self.sizes[d + j]) return false;
          indexed[d + j] = true;
        }
        s.count = 0;
        const uint8_t* m = static_cast<const uint8_t*>(t.data);  // bytes: any non-zero byte is true
        for (int32_t q = 0; q < t.numel; ++q) s.count += m[q] != 0 ? 1 : 0;
        s.mask_numel = t.numel;
        s.cursor_p = s.cursor_q = -1;
        d += t.dim;
        s.self_stride = self_stride[d - 1];  // consecutive dims: flat mask position times the last stride
      } else if (is_index_dtype(t.dtype)) {
        if (d >= self.dim) return false;
        s.dim_size = self.sizes[d];
        s.self_stride = self_stride[d];
        indexed[d++] = true;
      } else {
        return false;
      }
    }
    if (num_sources_ == 0) return false;
    // B: the index tensors' broadcast shape (a mask counts as a 1-d [count]).
    nb_ = 0;
    for (int32_t k = 0; k < num_sources_; ++k) nb_ = source_dim(k) > nb_ ? source_dim(k) : nb_;
    int32_t b_sizes[kMaxDims];
    for (int32_t j = 0; j < nb_; ++j) {
      int32_t n = 1;
      for (int32_t k = 0; k < num_sources_; ++k) {
        const int32_t sj = j - (nb_ - source_dim(k));
        if (sj < 0) continue;
        const int32_t m = source_size(k, sj);
        if (m != 1 && n != 1 && m != n) return false;
        if (m != 1) n = m;
      }
      b_sizes[j] = n;
    }
    // Indexed dims adjacent (no kept dim between the first and the last)?
    int32_t first = -1, last = -1;
    for (int32_t j = 0; j < self.dim; ++j) {
      if (!indexed[j]) continue;
      if (first < 0) first = j;
      last = j;
    }
    bool adjacent = true;
    for (int32_t j = first; j <= last; ++j) adjacent = adjacent && indexed[j];
    // R: [kept dims before `first`] B [kept dims after `last`] when adjacent,
    // else B [kept dims, in order].
    b_first_ = adjacent ? first : 0;
    dim_ = 0;
    if (adjacent) {
      for (int32_t j = 0; j < first; ++j) {
        if (!push(self.sizes[j], self_stride[j])) return false;
      }
    }
    for (int32_t k = 0; k < nb_; ++k) {
      if (!push(b_sizes[k], 0)) return false;
    }
    for (int32_t j = adjacent ? last + 1 : 0; j < self.dim; ++j) {
      if (!indexed[j] && !push(self.sizes[j], self_stride[j])) return false;
    }
    int64_t numel = 1;  // index tensors may broadcast to more than any tensor holds
    for (int32_t j = 0; j < dim_; ++j) {
      numel *= sizes_[j];
      if (numel > 0x7FFFFFFF) return false;
    }
    // Trailing kept dims (after the last indexed one): contiguous in self and in R.
    inner_dims_ = self.dim - 1 - last;
    inner_ = 1;
    for (int32_t j = last + 1; j < self.dim; ++j) inner_ *= self.sizes[j];
    return true;
  }

  int32_t dim() const { return dim_; }
  int32_t size(int32_t d) const { return sizes_[d]; }
  // Elements of the trailing kept dims: a contiguous block in self and in R.
  int32_t inner() const { return inner_; }
  int32_t inner_dims() const { return inner_dims_; }

  // `t` has R's shape.
  bool is_result_shape(const TensorRef& t) const {
    if (t.dim != dim_) return false;
    for (int32_t d = 0; d < dim_; ++d) {
      if (t.sizes[d] != sizes_[d]) return false;
    }
    return true;
  }

  // Strides to read `v` (contiguous) at R's positions: 0 where it is broadcast.
  // False unless `v` broadcasts to R.
  bool broadcast_strides(const TensorRef& v, int32_t* strides) const {
    if (v.dim > dim_ || !v.is_contiguous()) return false;
    const int32_t lead = dim_ - v.dim;
    int32_t s = 1;
    for (int32_t d = dim_ - 1; d >= 0; --d) {
      const int32_t n = d < lead ? 1 : v.sizes[d - lead];
      if (n != 1 && n != sizes_[d]) return false;
      strides[d] = n == 1 ? 0 : s;
      s *= n;
    }
    return true;
  }

  // Walks R's first `ndim` dims (dim(), or dim() - inner_dims() to take the
  // inner block at once) in row-major order, calling f(self_offset,
  // value_offset, position): self_offset in elements of self, value_offset
  // by `value_strides` (per R dim; nullptr: always 0), position the element's
  // (or block's) number in that walk. False, at the first element whose index
  // is out of range, when an index is out of range (f was called for the
  // elements before it).
  template <typename F>
  bool for_each(int32_t ndim, const int32_t* value_strides, F&& f) {
    int32_t count = 1;
    for (int32_t d = 0; d < ndim; ++d) count *= sizes_[d];
    if (count == 0) return true;
    int32_t coord[kMaxDims] = {};
    int32_t self_off = 0, value_off = 0, index_off = 0;
    bool changed = true;  // a coordinate of B changed: read the index tensors again
    for (int32_t e = 0; e < count; ++e) {
      if (changed) {
        if (!index_offset(coord + b_first_, &index_off)) return false;
        changed = false;
      }
      f(self_off + index_off, value_off, e);
      for (int32_t d = ndim - 1; d >= 0; --d) {
        const int32_t vs = value_strides != nullptr ? value_strides[d] : 0;
        if (d >= b_first_ && d < b_first_ + nb_) changed = true;
        if (++coord[d] < sizes_[d]) {
          self_off += strides_[d];
          value_off += vs;
          break;
        }
        coord[d] = 0;
        self_off -= strides_[d] * (sizes_[d] - 1);
        value_off -= vs * (sizes_[d] - 1);
      }
    }
    return true;
  }

 private:
  // One tensor of the list: int32/int64 positions along one dim of self, or
  // a bool mask over consecutive dims (its true elements' flat positions).
  struct Source {
    const void* data;
    const int32_t* sizes;
    int32_t dim;
    DType dtype;
    int32_t self_stride;  // elements of self per step along the indexed dim (mask: its last dim)
    int32_t dim_size;     // index: the size of the dim it indexes
    int32_t count;        // mask: its true elements
    int32_t mask_numel;
    int32_t cursor_p, cursor_q;  // mask: its cursor_p-th true element is at flat position cursor_q
  };

  int32_t source_dim(int32_t k) const { return sources_[k].dtype == DType::Bool ? 1 : sources_[k].dim; }
  int32_t source_size(int32_t k, int32_t j) const {
    return sources_[k].dtype == DType::Bool ? sources_[k].count : sources_[k].sizes[j];
  }

  bool push(int32_t size, int32_t stride) {
    if (dim_ >= kMaxDims) return false;
    sizes_[dim_] = size;
    strides_[dim_++] = stride;
    return true;
  }

  // The flat position of the p-th true element of mask s (p < s.count). The
  // walk asks for p in order most of the time: one step from the cursor.
  static int32_t nth_true(Source& s, int32_t p) {
    const uint8_t* m = static_cast<const uint8_t*>(s.data);
    if (p < s.cursor_p) s.cursor_p = s.cursor_q = -1;
    while (s.cursor_p < p) {
      ++s.cursor_q;
      while (s.cursor_q < s.mask_numel && m[s.cursor_q] == 0) ++s.cursor_q;
      ++s.cursor_p;
    }
    return s.cursor_q;
  }

  // Sum over the index tensors of position * stride in self at B coordinate `b`.
  bool index_offset(const int32_t* b, int32_t* offset) {
    int32_t off = 0;
    for (int32_t k = 0; k < num_sources_; ++k) {
      Source& s = sources_[k];
      const int32_t sd = source_dim(k);
      int32_t e = 0;  // the element of the source at b (broadcast)
      for (int32_t j = 0; j < sd; ++j) {
        const int32_t n = source_size(k, j);
        e = e * n + (n == 1 ? 0 : b[nb_ - sd + j]);
      }
      if (s.dtype == DType::Bool) {
        const int32_t q = nth_true(s, e);
        if (q >= s.mask_numel) return false;  // cannot happen: e < count
        off += q * s.self_stride;
        continue;
      }
      TensorRef t;
      t.data = const_cast<void*>(s.data);
      t.dtype = s.dtype;
      int32_t p = 0;
      if (!read_index(t, e, s.dim_size, &p)) return false;
      off += p * s.self_stride;
    }
    *offset = off;
    return true;
  }

  Source sources_[kMaxDims];
  int32_t num_sources_ = 0;
  int32_t sizes_[kMaxDims];    // R
  int32_t strides_[kMaxDims];  // per R dim: its stride in self (0 for B's dims)
  int32_t dim_ = 0;
  int32_t b_first_ = 0, nb_ = 0;  // B's dims are R's [b_first_, b_first_ + nb_)
  int32_t inner_ = 1, inner_dims_ = 0;
};

}  // namespace kernels
}  // namespace mcu

namespace mcu {
namespace kernels {

// out = self, then out[indices] = values (or += with accumulate), indices the
// Tensor?[] argument `indices_arg` (index_put.out, index_put_; out may be self).
template <DTypeSet Set>
Error put_indexed(const KernelContext& ctx, const TensorRef& in, int32_t indices_arg, const TensorRef& values,
                  bool accumulate, const TensorRef& out) {
  if (out.dtype != in.dtype || values.dtype != in.dtype || !same_layout(in, out)) return Error::KernelFailed;
  AdvancedIndex ix;
  int32_t value_strides[kMaxDims];
  if (!ix.init(ctx, indices_arg, in) || !ix.broadcast_strides(values, value_strides)) return Error::KernelFailed;
  if (out.data != in.data) move_bytes(out.data, in.data, in.nbytes());
  bool ok = false;
  const bool known = dispatch_dtype<Set>(in.dtype, [&](auto zero) {
    using C = decltype(zero);
    C* dst = static_cast<C*>(out.data);
    if (accumulate) {
      ok = ix.for_each(ix.dim(), value_strides, [&](int32_t at, int32_t from, int32_t) {
        const C v = read_element<C>(values.data, from);
        if constexpr (__is_same(C, float)) dst[at] += v;
        else dst[at] = wrapping_add(read_element<C>(out.data, at), v);
      });
    } else {
      ok = ix.for_each(ix.dim(), value_strides,
                       [&](int32_t at, int32_t from, int32_t) { dst[at] = read_element<C>(values.data, from); });
    }
  });
  return known && ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
