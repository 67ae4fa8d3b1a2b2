// Helpers shared by the portable elementwise, activation and shape kernels.
//
// Everything here is header-only (inline) so that a selective build links
// exactly the kernels a program uses and nothing else; the linker folds the
// copies the kernels share.
//
// Conventions:
// - float tensors are contiguous (dim_order is the identity); elementwise
//   kernels also accept any layout as long as every tensor has the same shape
//   and dim_order, because then the element order does not matter.
// - Shape ops copy raw elements of any dtype the runtime knows (1, 2, 4 or 8
//   bytes), so the same file serves float and integer tensors. They need
//   contiguous tensors, except clone, which also converts between layouts.
// - Strides and sizes are in elements, never bytes, and fit in int32 because
//   the loader checked that every tensor fits in the arena.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/error.h"
#include "mcu/kernel.h"
#include "mcu/types.h"

namespace mcu {
namespace kernels {

// ---------------------------------------------------------------------------
// Small checks

inline bool is_float(const TensorRef& t) { return t.dtype == DType::Float; }

// A tensor without a dim_order (nullptr) is contiguous.
inline bool same_dim_order(const TensorRef& a, const TensorRef& b) {
  if (a.dim != b.dim) return false;
  if (a.dim_order == b.dim_order) return true;  // the program writer shares equal dim orders
  if (a.dim_order == nullptr || b.dim_order == nullptr) return a.is_contiguous() && b.is_contiguous();
  for (int32_t d = 0; d < a.dim; ++d) {
    if (a.dim_order[d] != b.dim_order[d]) return false;
  }
  return true;
}

// Same shape, same dtype, same layout: the element order of both is the same.
inline bool same_layout(const TensorRef& a, const TensorRef& b) {
  if (a.dtype != b.dtype) return false;
  // The program writer shares equal size and dim-order vectors: usually
  // decided by pointers alone.
  if (a.sizes == b.sizes && a.dim_order == b.dim_order && a.dim == b.dim) return true;
  return a.same_shape(b) && same_dim_order(a, b);
}

// Wraps an ATen dim argument (negative counts from the end) into [0, ndim).
// A 0-dim tensor accepts dim 0 and -1, as in ATen. Returns false when out of range.
inline bool wrap_dim(int64_t dim, int32_t ndim, int32_t* wrapped) {
  const int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n) return false;
  *wrapped = static_cast<int32_t>(dim < 0 ? dim + n : dim);
  return true;
}

// Element size of a dtype a shape op can copy, 0 otherwise.
inline size_t element_size(const TensorRef& t) {
  const size_t n = dtype_size(t.dtype);
  return (n == 1 || n == 2 || n == 4 || n == 8) ? n : 0;
}

// Product of sizes[begin, end).
inline int32_t size_product(const TensorRef& t, int32_t begin, int32_t end) {
  int32_t p = 1;
  for (int32_t d = begin; d < end; ++d) p *= t.sizes[d];
  return p;
}

// Copies n bytes; source and destination may overlap or be the same buffer.
inline void move_bytes(void* dst, const void* src, size_t n) {
  if (dst != src && n > 0) memmove(dst, src, n);
}

// Contiguous strides (in elements) of a shape.
inline void contiguous_strides(const int32_t* sizes, int32_t ndim, int32_t* strides) {
  int32_t s = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
}

// Strides of a tensor stored in its dim_order: the last dim of the order is
// the fastest. For the identity order these are the contiguous strides.
inline void layout_strides(const TensorRef& t, int32_t* strides) {
  int32_t s = 1;
  for (int32_t k = t.dim - 1; k >= 0; --k) {
    const int32_t d = t.dim_order != nullptr ? t.dim_order[k] : k;
    strides[d] = s;
    s *= t.sizes[d];
  }
}

// ---------------------------------------------------------------------------
// Broadcasting (NumPy rules, shapes right-aligned)

// Strides to read `in` while walking `out`'s shape: 0 where `in` is broadcast.
// Returns false unless `in` broadcasts to `out`.
inline bool broadcast_strides(const TensorRef& in, const TensorRef& out, int32_t* strides) {
  if (in.dim > out.dim) return false;
  const int32_t lead = out.dim - in.dim;
  int32_t s = 1;
  for (int32_t d = out.dim - 1; d >= 0; --d) {
    if (d < lead) {
      strides[d] = 0;
      continue;
    }
    const int32_t n = in.sizes[d - lead];
    if (n == out.sizes[d]) {
      strides[d] = n == 1 ? 0 : s;
    } else if (n == 1) {
      strides[d] = 0;
    } else {
      return false;
    }
    s *= n;
  }
  return true;
}

// True when `out` has exactly the broadcast shape of `a` and `b`.
inline bool broadcasts_to(const TensorRef& a, const TensorRef& b, const TensorRef& out) {
  if (out.dim != (a.dim > b.dim ? a.dim : b.dim)) return false;
  for (int32_t d = 0; d < out.dim; ++d) {
    const int32_t da = d - (out.dim - a.dim);
    const int32_t db = d - (out.dim - b.dim);
    const int32_t na = da >= 0 ? a.sizes[da] : 1;
    const int32_t nb = db >= 0 ? b.sizes[db] : 1;
    if (na != nb && na != 1 && nb != 1) return false;
    if (out.sizes[d] != (na == 1 ? nb : na)) return false;
  }
  return true;
}

// A loop nest over `dims` sizes with N strided operands (a destination and
// N - 1 sources). Adjacent dims that every operand walks as one are merged, so
// same-shape operands become one flat loop and a per-channel operand two.
template <int N>
struct LoopNestN {
  int32_t dims = 0;
  int32_t size[kMaxDims] = {};
  int32_t stride[N][kMaxDims] = {};  // [operand][dim]

  // strides[k] holds operand k's stride (in elements) per dim of `sizes`.
  void init(const int32_t* sizes, int32_t ndim, const int32_t* const* strides) {
    dims = 0;
    for (int32_t d = 0; d < ndim; ++d) {
      if (sizes[d] == 1) continue;  // contributes nothing to any offset
      bool merge = dims > 0;
      for (int32_t k = 0; k < N && merge; ++k) {
        merge = stride[k][dims - 1] == strides[k][d] * sizes[d];
      }
      if (merge) {
        size[dims - 1] *= sizes[d];
        for (int32_t k = 0; k < N; ++k) stride[k][dims - 1] = strides[k][d];
      } else {
        size[dims] = sizes[d];
        for (int32_t k = 0; k < N; ++k) stride[k][dims] = strides[k][d];
        ++dims;
      }
    }
    if (dims == 0) {  // a single element
      dims = 1;
      size[0] = 1;
      for (int32_t k = 0; k < N; ++k) stride[k][0] = 0;
    }
  }

  // Elements in each innermost row, and operand k's stride along it.
  int32_t row_length() const { return size[dims - 1]; }
  int32_t row_stride(int32_t k) const { return stride[k][dims - 1]; }

  // Calls row(off) with off[k] the element offset of operand k at the start of
  // every innermost row; the row has row_length() elements.
  template <typename Row>
  void for_each_row(Row row) const {
    const int32_t last = dims - 1;
    int32_t index[kMaxDims] = {};
    int32_t off[N] = {};
    int32_t rows = 1;
    for (int32_t d = 0; d < last; ++d) rows *= size[d];
    for (int32_t r = 0; r < rows; ++r) {
      row(static_cast<const int32_t*>(off));
      // Advance the outer index like an odometer.
      for (int32_t d = last - 1; d >= 0; --d) {
        for (int32_t k = 0; k < N; ++k) off[k] += stride[k][d];
        if (++index[d] < size[d]) break;
        for (int32_t k = 0; k < N; ++k) off[k] -= stride[k][d] * size[d];
        index[d] = 0;
      }
    }
  }
};

// A destination and two sources (the binary kernels).
using LoopNest = LoopNestN<3>;

// ---------------------------------------------------------------------------
// Elementwise float kernels. `out` may be the same memory as an input: each
// output element is written after the inputs it depends on are read, at the
// same index.

// out[i] = f(in[i]); `in` and `out` must match in shape and layout.
template <typename F>
Error unary_float(const TensorRef& in, const TensorRef& out, F f) {
  if (!is_float(in) || !same_layout(in, out)) return Error::KernelFailed;
  const float* x = in.f32();
  float* y = out.f32();
  const int32_t n = out.numel;
  for (int32_t i = 0; i < n; ++i) y[i] = f(x[i]);
  return Error::Ok;
}

// out = f(a, b) with NumPy broadcasting; `out` has the broadcast shape.
template <typename F>
Error binary_float(const TensorRef& a, const TensorRef& b, const TensorRef& out, F f) {
  if (!is_float(a) || !is_float(b) || !is_float(out)) return Error::KernelFailed;
  const float* x = a.f32();
  const float* y = b.f32();
  float* z = out.f32();
  const int32_t n = out.numel;

  // Fast paths: plain loops for equal shapes and for a one-element operand.
  const bool a_full = same_layout(a, out);
  const bool b_full = same_layout(b, out);
  if (a_full && b_full) {
    for (int32_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    return Error::Ok;
  }
  if (!broadcasts_to(a, b, out)) return Error::KernelFailed;
  if (n == 0) return Error::Ok;
  if (a_full && b.numel == 1) {
    const float s = y[0];
    for (int32_t i = 0; i < n; ++i) z[i] = f(x[i], s);
    return Error::Ok;
  }
  if (b_full && a.numel == 1) {
    const float s = x[0];
    for (int32_t i = 0; i < n; ++i) z[i] = f(s, y[i]);
    return Error::Ok;
  }
  // Broadcasting needs element order = logical order.
  if (!a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous()) return Error::KernelFailed;
  int32_t sa[kMaxDims];
  int32_t sb[kMaxDims];
  int32_t sz[kMaxDims];
  broadcast_strides(a, out, sa);
  broadcast_strides(b, out, sb);
  contiguous_strides(out.sizes, out.dim, sz);
  const int32_t* strides[3] = {sz, sa, sb};
  LoopNest loop;
  loop.init(out.sizes, out.dim, strides);
  const int32_t len = loop.row_length();
  const int32_t ia = loop.row_stride(1);
  const int32_t ib = loop.row_stride(2);
  loop.for_each_row([&](const int32_t* off) {
    float* zr = z + off[0];
    const float* xr = x + off[1];
    const float* yr = y + off[2];
    if (ib == 0) {
      const float s = yr[0];
      for (int32_t i = 0; i < len; ++i) zr[i] = f(xr[i * ia], s);
    } else if (ia == 0) {
      const float s = xr[0];
      for (int32_t i = 0; i < len; ++i) zr[i] = f(s, yr[i * ib]);
    } else {
      for (int32_t i = 0; i < len; ++i) zr[i] = f(xr[i * ia], yr[i * ib]);
    }
  });
  return Error::Ok;
}

// ---------------------------------------------------------------------------
// Element copies for shape ops

template <typename E>
void copy_rows(uint8_t* dst, const uint8_t* src, const LoopNestN<2>& loop) {
  const int32_t len = loop.row_length();
  const int32_t sd = loop.row_stride(0);
  const int32_t ss = loop.row_stride(1);
  E* d0 = reinterpret_cast<E*>(dst);
  const E* s0 = reinterpret_cast<const E*>(src);
  loop.for_each_row([&](const int32_t* off) {
    E* d = d0 + off[0];
    const E* s = s0 + off[1];
    if (sd == 1 && ss == 1) {
      memmove(d, s,  // memmove: a corrupt plan may overlap input and output; no UB then
              static_cast<size_t>(len) * sizeof(E));
    } else {
      for (int32_t i = 0; i < len; ++i) d[i * sd] = s[i * ss];
    }
  });
}

// Copies a strided block of `sizes` elements of `esize` bytes from src to dst
// (strides in elements; dst and src must not overlap).
inline void strided_copy(void* dst, const int32_t* dst_strides, const void* src, const int32_t* src_strides,
                         const int32_t* sizes, int32_t ndim, size_t esize) {
  for (int32_t d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) return;
  }
  const int32_t* strides[2] = {dst_strides, src_strides};
  LoopNestN<2> loop;
  loop.init(sizes, ndim, strides);
  uint8_t* d = static_cast<uint8_t*>(dst);
  const uint8_t* s = static_cast<const uint8_t*>(src);
  switch (esize) {
    case 1: copy_rows<uint8_t>(d, s, loop); break;
    case 2: copy_rows<uint16_t>(d, s, loop); break;
    case 4: copy_rows<uint32_t>(d, s, loop); break;
    default: copy_rows<uint64_t>(d, s, loop); break;
  }
}

// Checks that `a` and `b` are contiguous tensors of the same copyable dtype.
inline bool copyable_pair(const TensorRef& a, const TensorRef& b) {
  return a.dtype == b.dtype && element_size(a) != 0 && a.is_contiguous() && b.is_contiguous();
}

// Shape-only ops (view, squeeze, unsqueeze): out holds in's elements in the
// same order. Checks dtype and element count; in and out may alias.
inline Error copy_same_elements(const TensorRef& in, const TensorRef& out) {
  if (!copyable_pair(in, out) || in.numel != out.numel) return Error::KernelFailed;
  move_bytes(out.data, in.data, out.nbytes());
  return Error::Ok;
}

// out = a copy of `in` (same shape and dtype) in out's layout: one move when the
// dim orders agree, else a walk over the logical shape (not in place). The body
// of aten::clone and dim_order_ops::_clone_dim_order.
inline Error copy_to_layout(const TensorRef& in, const TensorRef& out) {
  if (in.dtype != out.dtype || !in.same_shape(out) || element_size(in) == 0) return Error::KernelFailed;
  if (same_dim_order(in, out)) {
    move_bytes(out.data, in.data, out.nbytes());
    return Error::Ok;
  }
  if (in.data == out.data && in.numel > 1) return Error::KernelFailed;  // a layout change cannot be in place
  int32_t in_strides[kMaxDims];
  int32_t out_strides[kMaxDims];
  layout_strides(in, in_strides);
  layout_strides(out, out_strides);
  strided_copy(out.data, out_strides, in.data, in_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

// ExecuTorch's dim_order argument `arg` (int[]?, None = contiguous) equals out's dim order
// (dim_order_ops::_clone_dim_order, _to_dim_order_copy, _empty_dim_order).
inline bool dim_order_matches(const KernelContext& ctx, int32_t arg, const TensorRef& out) {
  if (ctx.is_none(arg)) return out.is_contiguous();
  const IntList order = ctx.int_list(arg);
  if (order.size() != out.dim) return false;
  for (int32_t d = 0; d < out.dim; ++d) {
    const int64_t want = out.dim_order == nullptr ? d : out.dim_order[d];
    if (order[d] != want) return false;
  }
  return true;
}

}  // namespace kernels
}  // namespace mcu
