// Selection along a dim without scratch: what median, nanmedian, kthvalue and mode share (op_median.cpp,
// op_median_dim.cpp, op_nanmedian.cpp, op_nanmedian_dim.cpp, op_kthvalue.cpp, op_mode.cpp), and the shared
// bodies of median/nanmedian (with and without dim).
//
// ATen's CPU kernels pick an element with std::nth_element, a quickselect or std::sort (aten/src/ATen/native/
// Sorting.cpp, cpu/TensorCompareKernel.cpp); where their comparison is a strict total order on (value, index),
// the element they return is fixed by that order, and select_in_order finds it with no scratch at all. Where
// equal elements stay equal (kthvalue's ties, mode's, an all-NaN slice of nanmedian, the sign of a zero median)
// the algorithm decides, and the kernels run it step for step on a stack array of element numbers
// (kOrderedMax of them, one byte each) or, for the all-NaN slice, trace it by formula.
#pragma once

#include <math.h>
#include <stdint.h>

#include "dtype_util.h"
#include "reduce_common.h"
#include "sort_common.h"

namespace mcu {
namespace kernels {

// Slices of up to this many elements get the stack array of element numbers (uint8_t: 256 bytes).
constexpr int32_t kOrderedMax = 256;

// n elements of a tensor, `stride` elements apart from `base`: one slice along the reduced dim.
template <typename C>
struct Slice {
  const void* data;
  int32_t base;
  int32_t stride;
  int32_t n;
  C operator[](int32_t i) const { return read_element<C>(data, base + i * stride); }
};

// The strict total order of element numbers behind median.dim's and nanmedian.dim's std::nth_element: by value,
// equal values by index, NaN after every number (NaNs by index too, which ATen leaves equal: callers select
// among the numbers only, or, for kthvalue's long slices, say so).
template <typename C>
struct RankBefore {
  const Slice<C>& s;
  bool operator()(int32_t i, int32_t j) const {
    const C a = s[i], b = s[j];
    const bool a_nan = is_nan_value(a), b_nan = is_nan_value(b);
    if (a_nan || b_nan) return a_nan == b_nan ? i < j : b_nan;
    return a < b || (a == b && i < j);
  }
};

// The element number at position k (0-based) of [0, n) in `before`, a strict total order, without scratch:
// a quickselect that keeps only the bounds of the range the answer lies in (lo and hi: element numbers, -1
// for none) and how many elements come before lo; each round's pivot is the middle candidate in slice order.
// Two passes a round, O(n log n) comparisons expected, O(n^2) at worst. Every round drops the pivot at least,
// so it ends for any irreflexive `before`; -1 when one that is not a strict total order leaves no answer.
template <class Before>
int32_t select_in_order(int32_t n, int32_t k, Before before) {
  int32_t lo = -1, hi = -1;
  int32_t below = 0;       // elements before lo (and lo itself)
  int32_t candidates = n;  // elements strictly between lo and hi
  const auto inside = [&](int32_t i) { return (lo < 0 || before(lo, i)) && (hi < 0 || before(i, hi)); };
  while (candidates > 0) {
    int32_t pivot = -1;
    for (int32_t i = 0, seen = 0; i < n && pivot < 0; ++i) {
      if (inside(i) && seen++ == candidates / 2) pivot = i;
    }
    if (pivot < 0) return -1;
    int32_t less = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (inside(i) && before(i, pivot)) ++less;
    }
    if (below + less == k) return pivot;
    if (k < below + less) {
      hi = pivot;
      candidates = less;
    } else {
      lo = pivot;
      below += less + 1;
      candidates -= less + 1;
    }
  }
  return -1;
}

// Where std::nth_element(first, first, first + n, before) finds the element it leaves in front, when no element
// sorts before another (nanmedian's comparison on an all-NaN slice): libstdc++'s introselect then moves
// elements by n alone. Each round on [0, len), len > 3, swaps the middle element (the median of three equals)
// to the front, then the unguarded partition stops at once on both sides and swaps positions p and len - p
// for p in [1, cut), cut = 1 + (len - 1) / 2, where the next round's range ends (the depth limit, 2 log2 n, is
// never reached: each round halves the range). The final insertion sort of <= 3 elements moves nothing. So
// position 0 is traced back from the last round to the first, recomputing each round's len (no scratch).
inline int32_t nth_element_front_of_equals(int32_t n) {
  int32_t rounds = 0;
  for (int32_t len = n; len > 3; len = 1 + (len - 1) / 2) ++rounds;
  int32_t p = 0;
  for (int32_t round = rounds - 1; round >= 0; --round) {
    int32_t len = n;
    for (int32_t r = 0; r < round; ++r) len = 1 + (len - 1) / 2;
    const int32_t mid = len / 2;
    if (p >= 1 && p < 1 + (len - 1) / 2) p = len - p;  // the partition's swap
    p = p == 0 ? mid : (p == mid ? 0 : p);             // the pivot's move to the front
  }
  return p;
}

// The NaN ATen's median (no dim) returns for a slice with a NaN (std::numeric_limits::quiet_NaN()).
template <typename C>
C quiet_nan() {
  if constexpr (__is_same(C, float)) return NAN;
  else return C(0);  // integers have no NaN: never returned
}

// median.dim / nanmedian.dim's element (ATen's median_with_indices_impl): with a NaN, median's is the first NaN;
// else the element at position (numbers - 1) / 2 of the slice's numbers in (value, index) order. nanmedian of an
// all-NaN slice: k = 0 among elements that are all equivalent to its comparison, so std::nth_element's moves.
template <typename C>
int32_t median_element(const Slice<C>& s, bool ignore_nan) {
  int32_t nans = 0, first_nan = -1;
  for (int32_t i = 0; i < s.n; ++i) {
    if (is_nan_value(s[i])) {
      if (first_nan < 0) first_nan = i;
      ++nans;
    }
  }
  if (nans > 0 && !ignore_nan) return first_nan;
  if (nans == s.n) return nth_element_front_of_equals(s.n);
  return select_in_order(s.n, (s.n - nans - 1) / 2, RankBefore<C>{s});
}

// The value of median / nanmedian without dim (ATen's median_impl: std::nth_element on the values, compared by
// value only, NaN last for nanmedian; a quiet NaN for median when there is a NaN), of a contiguous slice (base 0,
// stride 1). Equal values differ only in the sign of a zero: up to kOrderedMax elements std::nth_element runs on
// the stack array, so that sign is ATen's; a longer tensor takes the value at the same position of the (value,
// index) order (the same value, a zero of either sign). False if the selection failed.
template <typename C>
bool median_value(const Slice<C>& s, bool ignore_nan, C* value) {
  int32_t nans = 0;
  for (int32_t i = 0; i < s.n; ++i) nans += is_nan_value(s[i]) ? 1 : 0;
  int32_t at = -1;
  if (nans > 0 && !ignore_nan) {
    *value = quiet_nan<C>();
    return true;
  }
  const int32_t k = (s.n - nans - 1) / 2;
  if (nans == s.n) {
    at = nth_element_front_of_equals(s.n);
  } else if (s.n > kOrderedMax) {
    at = select_in_order(s.n, k, RankBefore<C>{s});
  } else {
    uint8_t order[kOrderedMax];
    for (int32_t i = 0; i < s.n; ++i) order[i] = static_cast<uint8_t>(i);
    const SortBefore<C> before{static_cast<const C*>(s.data), 1, false};  // a < b, NaN after every number
    nth_element(order, order + k, order + s.n, before);
    at = order[k];
  }
  if (at < 0 || at >= s.n) return false;
  *value = s[at];
  return true;
}

// The slices of self along one dim for the reductions to (values, indices): median.dim, nanmedian.dim,
// kthvalue, mode. init checks the outs (self's dtype and int64, the reduced shape with or without keepdim).
struct DimSlices {
  TensorRef in;
  TensorRef values;
  TensorRef indices;
  Reduction r;
  int32_t n = 1;       // elements along dim (1 for a 0-dim self)
  int32_t stride = 1;  // between them

  bool init(const KernelContext& ctx, int32_t dim_arg, int32_t keepdim_arg, int32_t values_arg) {
    in = ctx.tensor(0);
    values = ctx.tensor(values_arg);
    indices = ctx.tensor(values_arg + 1);
    if (values.dtype != in.dtype || indices.dtype != DType::Int64) return false;
    const bool keepdim = ctx.bool_arg(keepdim_arg);
    if (!r.init(in, reduced_dim(ctx, dim_arg, in.dim)) || !r.matches(values, keepdim) ||
        !r.matches(indices, keepdim)) {
      return false;
    }
    int32_t dim = 0;
    if (!wrap_dim(ctx.int_arg(dim_arg), in.dim, &dim)) return false;
    if (in.dim > 0) {
      n = in.sizes[dim];
      stride = size_product(in, dim + 1, in.dim);
    }
    return n > 0 || r.out_numel() == 0;  // ATen raises for an empty slice
  }

  // pick(slice) gives each slice's chosen element number; its value and index go to the outs. False for a
  // dtype outside kSet or a number outside the slice.
  template <DTypeSet kSet, typename Pick>
  bool run(Pick pick) const {
    bool ok = true;
    const bool known = dispatch_dtype<kSet>(in.dtype, [&](auto tag) {
      using C = decltype(tag);
      C* v = static_cast<C*>(values.data);
      int64_t* idx = static_cast<int64_t*>(indices.data);
      r.for_each_output([&](int32_t o, int32_t base) {
        const Slice<C> s{in.data, base, stride, n};
        const int32_t at = pick(s);
        if (at < 0 || at >= n) {
          ok = false;
          return;
        }
        v[o] = s[at];
        idx[o] = at;
      });
    });
    return known && ok;
  }
};

// median.dim_values / nanmedian.dim_values: self, dim, keepdim, values, indices.
template <DTypeSet kSet>
Error median_dim_kernel(const KernelContext& ctx, bool ignore_nan) {
  DimSlices slices;
  if (!slices.init(ctx, 1, 2, 3)) return Error::KernelFailed;
  const bool ok = slices.run<kSet & kRealTypes>([&](const auto& s) { return median_element(s, ignore_nan); });
  return ok ? Error::Ok : Error::KernelFailed;
}

// median.out / nanmedian.out: self, out (0-dim).
template <DTypeSet kSet>
Error median_kernel(const KernelContext& ctx, bool ignore_nan) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype || out.dim != 0 || !in.is_contiguous() || in.numel <= 0) return Error::KernelFailed;
  bool ok = false;
  dispatch_dtype<kSet & kRealTypes>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    ok = median_value(Slice<C>{in.data, 0, 1, in.numel}, ignore_nan, static_cast<C*>(out.data));
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
