// The sorts that reproduce ATen's CPU order of equal elements: libstdc++'s std::sort (introsort, what
// torch.sort(stable=False) and topk run, without recursion), std::partial_sort and std::nth_element, written
// out on any random-access iterator (no C++ standard library: the RISC-V toolchain has none); an iterator
// over every `stride`-th int64 (a slice's indices along a dim that is not the last); a stable sort; and the sort
// kernels' shared body (op_sort.cpp, op_sort_stable.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// libstdc++'s heap algorithms (bits/stl_heap.h), step for step: std::partial_sort and std::nth_element are
// built on them, and the order they leave equal elements in is theirs. Written out because the RISC-V
// toolchain (picolibc) has no C++ standard library headers.
template <class It, class Before, class V>
void push_heap_hole(It first, ptrdiff_t hole, ptrdiff_t top, V value, Before before) {
  ptrdiff_t parent = (hole - 1) / 2;
  while (hole > top && before(first[parent], value)) {
    first[hole] = first[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  first[hole] = value;
}

template <class It, class Before, class V>
void adjust_heap(It first, ptrdiff_t hole, ptrdiff_t len, V value, Before before) {
  const ptrdiff_t top = hole;
  ptrdiff_t child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (before(first[child], first[child - 1])) child--;
    first[hole] = first[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    first[hole] = first[child - 1];
    hole = child - 1;
  }
  push_heap_hole(first, hole, top, value, before);
}

template <class It, class Before>
void make_heap(It first, It last, Before before) {
  const ptrdiff_t len = last - first;
  if (len < 2) return;
  for (ptrdiff_t parent = (len - 2) / 2;; --parent) {
    adjust_heap(first, parent, len, first[parent], before);
    if (parent == 0) return;
  }
}

template <class It, class Before>
void pop_heap_into(It first, It last, It result, Before before) {
  const auto value = *result;
  *result = *first;
  adjust_heap(first, 0, last - first, value, before);
}

template <class It, class Before>
void heap_select(It first, It middle, It last, Before before) {
  make_heap(first, middle, before);
  for (It i = middle; i < last; ++i) {
    if (before(*i, *first)) pop_heap_into(first, middle, i, before);
  }
}

// std::partial_sort(first, middle, last): the smallest middle - first elements, sorted, in front.
template <class It, class Before>
void partial_sort(It first, It middle, It last, Before before) {
  heap_select(first, middle, last, before);
  for (It end = middle; end - first > 1;) {
    --end;
    pop_heap_into(first, end, end, before);
  }
}

template <class It>
void swap_at(It a, It b) {
  const auto t = *a;
  *a = *b;
  *b = t;
}

// libstdc++'s __insertion_sort: an element that sorts before the first moves straight to the front, any other
// is inserted by scanning back. Under a strict weak order the same as any stable insertion sort; under mode's
// comparison by value alone, which NaNs break (they compare false both ways), the order is libstdc++'s.
template <class It, class Before>
void insertion_sort(It first, It last, Before before) {
  if (last - first < 2) return;
  for (It i = first + 1; i < last; ++i) {
    const auto v = *i;
    It j = i;
    const bool to_front = before(v, *first);
    for (; j > first && (to_front || before(v, *(j - 1))); --j) *j = *(j - 1);
    *j = v;
  }
}

// libstdc++'s __final_insertion_sort (std::sort's last pass): the first kSortThreshold elements by insertion_sort,
// each later one by scanning back (__unguarded_linear_insert: no move to the front; the bound at `first` only
// keeps a scan that NaNs confuse inside the range, where libstdc++ relies on a smaller element in front).
constexpr int32_t kSortThreshold = 16;  // libstdc++'s _S_threshold: std::sort leaves ranges this short to this pass

template <class It, class Before>
void final_insertion_sort(It first, It last, Before before) {
  if (last - first <= kSortThreshold) {
    insertion_sort(first, last, before);
    return;
  }
  insertion_sort(first, first + kSortThreshold, before);
  for (It i = first + kSortThreshold; i < last; ++i) {
    const auto v = *i;
    It j = i;
    for (; j > first && before(v, *(j - 1)); --j) *j = *(j - 1);
    *j = v;
  }
}

// A stable sort without scratch (what std::stable_sort's order is): each element inserted after the sorted ones
// it does not sort before, found by binary search: n log n comparisons, at most n^2 / 2 moves.
template <class It, class Before>
void binary_insertion_sort(It first, It last, Before before) {
  for (It i = first + 1; i < last; ++i) {
    const auto v = *i;
    It lo = first;
    It hi = i;
    while (lo < hi) {
      const It mid = lo + (hi - lo) / 2;
      if (before(v, *mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    for (It j = i; j > lo; --j) *j = *(j - 1);
    *lo = v;
  }
}

// libstdc++'s median-of-three pivot moved to the front and unguarded partition (__unguarded_partition_pivot).
template <class It, class Before>
It partition_pivot(It first, It last, Before before) {
  It a = first + 1;
  It b = first + (last - first) / 2;
  It c = last - 1;
  It median;
  if (before(*a, *b)) {
    median = before(*b, *c) ? b : (before(*a, *c) ? c : a);
  } else {
    median = before(*a, *c) ? a : (before(*b, *c) ? c : b);
  }
  swap_at(first, median);
  It lo = first + 1;
  It hi = last;
  for (;;) {
    while (before(*lo, *first)) ++lo;
    --hi;
    while (before(*first, *hi)) --hi;
    if (!(lo < hi)) return lo;
    swap_at(lo, hi);
    ++lo;
  }
}

// std::nth_element (libstdc++'s __introselect: depth limit 2 * floor(log2(n)), then the heap select).
template <class It, class Before>
void nth_element(It first, It nth, It last, Before before) {
  if (first == last || nth == last) return;
  int32_t depth = 0;
  for (ptrdiff_t m = last - first; m > 1; m >>= 1) depth += 2;
  while (last - first > 3) {
    if (depth == 0) {
      heap_select(first, nth + 1, last, before);
      swap_at(first, nth);
      return;
    }
    --depth;
    const It cut = partition_pivot(first, last, before);
    if (cut <= nth) {
      first = cut;
    } else {
      last = cut;
    }
  }
  insertion_sort(first, last, before);
}

// libstdc++'s std::sort on [first, last) (bits/stl_algo.h: __introsort_loop with a depth limit of
// 2 * floor(log2(n)), median-of-three pivots moved to the front, unguarded partitions, the heap sort
// at depth 0, ranges of up to 16 left to the final insertion sort: final_insertion_sort), without recursion: std::sort's recursion is one the image's static stack
// bound cannot bound (mcu_gen/firmware/stack_bound.py). The ranges the recursion would sort later are
// kept in a list (disjoint ranges: the order in which they are sorted does not change the result), at
// most one per level of the depth limit: kMaxDepth levels, so for up to 2^(kMaxDepth / 2 + 1) - 1
// elements (the caller checks).
template <int kMaxDepth, class It, class Before>
void introsort(It first, It last, Before before) {
  const int32_t n = static_cast<int32_t>(last - first);
  if (n < 2) return;
  int32_t depth = 0;
  for (int32_t m = n; m > 1; m >>= 1) depth += 2;
  struct Range {  // offsets from first: 12 bytes a level, whatever the iterator
    int32_t first;
    int32_t last;
    int32_t depth;
  };
  Range todo[kMaxDepth + 2];
  int32_t count = 0;
  todo[count++] = {0, n, depth};
  while (count > 0) {
    const Range r = todo[--count];
    It lo_end = first + r.first;
    It hi_end = first + r.last;
    int32_t d = r.depth;
    while (hi_end - lo_end > kSortThreshold) {
      if (d == 0) {
        partial_sort(lo_end, hi_end, hi_end, before);
        break;
      }
      --d;
      const It cut = partition_pivot(lo_end, hi_end, before);
      todo[count++] = {static_cast<int32_t>(cut - first), static_cast<int32_t>(hi_end - first), d};  // the upper part
      hi_end = cut;
    }
  }
  final_insertion_sort(first, last, before);
}

// A random-access iterator over data[0], data[stride], data[2 * stride], ... (the operators the sorts above use)
class StridedIndices {
 public:
  using difference_type = ptrdiff_t;
  using reference = int64_t&;

  StridedIndices() = default;
  StridedIndices(int64_t* data, ptrdiff_t stride) : data_(data), stride_(stride) {}
  reference operator*() const { return *data_; }
  reference operator[](difference_type k) const { return data_[k * stride_]; }
  StridedIndices& operator++() { data_ += stride_; return *this; }
  StridedIndices& operator--() { data_ -= stride_; return *this; }
  StridedIndices operator+(difference_type k) const { return StridedIndices(data_ + k * stride_, stride_); }
  StridedIndices operator-(difference_type k) const { return StridedIndices(data_ - k * stride_, stride_); }
  difference_type operator-(const StridedIndices& o) const { return (data_ - o.data_) / stride_; }
  bool operator==(const StridedIndices& o) const { return data_ == o.data_; }
  bool operator<(const StridedIndices& o) const { return data_ < o.data_; }
  bool operator>(const StridedIndices& o) const { return data_ > o.data_; }
  bool operator<=(const StridedIndices& o) const { return data_ <= o.data_; }

 private:
  int64_t* data_ = nullptr;
  ptrdiff_t stride_ = 1;
};

// ATen's sort order (KeyValueCompAsc / KeyValueCompDesc): NaN after every number, first when descending.
template <typename C>
struct SortBefore {
  const C* xs;
  ptrdiff_t inner;
  bool descending;
  template <typename Index>  // topk's uint16_t element numbers, sort's int64_t indices
  bool operator()(Index i, Index j) const {
    const C a = xs[static_cast<ptrdiff_t>(i) * inner], b = xs[static_cast<ptrdiff_t>(j) * inner];
    const bool a_nan = a != a, b_nan = b != b;  // always false for integers
    return descending ? (a_nan && !b_nan) || a > b : (!a_nan && b_nan) || a < b;
  }
};

constexpr int32_t kSortMax = 65535;  // elements along the sorted dim: introsort<30>'s list holds their depth limit

// Each slice of `in` along dim sorted into values and its int64 indices, as ATen's CPU kernel does: stable
// (binary_insertion_sort) or std::sort's order (introsort). No scratch: a slice's order is built in its own indices, then the values are
// read through it. False when an index read back is not one of the slice's (values overlapping indices: a
// corrupt program; nothing is read outside self).
template <typename C>
bool sort_slices(const TensorRef& in, C* values, int64_t* indices, int32_t dim, bool descending, bool stable) {
  const C* x = static_cast<const C*>(in.data);
  const int32_t n = in.sizes[dim];
  const int32_t outer = size_product(in, 0, dim);
  const int32_t inner = size_product(in, dim + 1, in.dim);
  for (int32_t o = 0; o < outer; ++o) {
    for (int32_t s = 0; s < inner; ++s) {
      const size_t base = static_cast<size_t>(o) * n * inner + s;
      const SortBefore<C> before{x + base, inner, descending};
      const StridedIndices order(indices + base, inner);
      for (int32_t i = 0; i < n; ++i) order[i] = i;
      if (stable) {
        binary_insertion_sort(order, order + n, before);
      } else {
        introsort<30>(order, order + n, before);
      }
      for (int32_t r = 0; r < n; ++r) {
        const int64_t k = order[r];
        if (k < 0 || k >= n) return false;
        values[base + static_cast<size_t>(r) * inner] = x[base + static_cast<size_t>(k) * inner];
      }
    }
  }
  return true;
}

// aten::sort.values / sort.values_stable: self, dim, descending and the two outs at these argument positions.
template <DTypeSet kSet>
Error sort_kernel(const KernelContext& ctx, int32_t dim_arg, int32_t descending_arg, int32_t values_arg,
                  bool stable) {
  const TensorRef in = ctx.tensor(0);
  const bool descending = ctx.bool_arg(descending_arg);
  const TensorRef values = ctx.tensor(values_arg);
  const TensorRef indices = ctx.tensor(values_arg + 1);
  if (values.dtype != in.dtype || indices.dtype != DType::Int64) return Error::KernelFailed;
  if (!in.is_contiguous() || !values.is_contiguous() || !indices.is_contiguous()) return Error::KernelFailed;
  if (!in.same_shape(values) || !in.same_shape(indices)) return Error::KernelFailed;
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(dim_arg), in.dim == 0 ? 1 : in.dim, &dim)) return Error::KernelFailed;
  if (in.dim == 0) {  // one element
    move_bytes(values.data, in.data, element_size(in));
    static_cast<int64_t*>(indices.data)[0] = 0;
    return Error::Ok;
  }
  if (in.numel == 0) return Error::Ok;
  // the values are written from self after a slice's indices are complete: self must not be either out
  if (in.sizes[dim] > kSortMax || values.data == in.data || indices.data == in.data) return Error::KernelFailed;
  bool ok = false;
  dispatch_dtype<kSet>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    ok = sort_slices<C>(in, static_cast<C*>(values.data), static_cast<int64_t*>(indices.data), dim, descending,
                        stable);
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
