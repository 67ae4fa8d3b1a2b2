// mcu-gen-kernel: op=aten::kthvalue.values fn=aten_kthvalue_values sig=TIIBOOX dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=5
// aten::kthvalue.values(Tensor self, SymInt k, int dim=-1, bool keepdim=False, *, Tensor(a!) values,
//     Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
// The k-th smallest element along dim (k from 1) and its int64 index; NaN sorts after every number. Of equal
// elements, ATen's CPU kernel returns the one its own quickselect (Sedgewick's, median-of-three pivot:
// quick_select_template in aten/src/ATen/native/Sorting.cpp) leaves at position k - 1 of a copy of the slice.
// For a slice of up to kOrderedMax (256) elements this kernel runs that quickselect step for step on a stack
// array of element numbers (swapping them swaps the values read through them), so the index among ties is
// ATen's. A longer slice has no scratch for it: it takes the element at position k - 1 of the (value, index)
// order (NaNs by index), so the value equals ATen's (a zero may come with the other sign), and the index is
// ATen's when no other element equals the k-th value and it is not NaN; else it may be another of the equal
// elements than ATen's.
#include "select_common.h"

namespace mcu {
namespace kernels {

namespace {

// ATen's gt_or_nan: x sorts after y (NaN after every number, NaNs equal).
template <typename C>
bool after_or_nan(C x, C y) {
  return (is_nan_value(x) && !is_nan_value(y)) || x > y;
}

// quick_select_template on the slice's element numbers: the element number it leaves at position k. The scans'
// bounds (i < hi, j > lo) never stop them before the values at hi and lo + 1 do (median of three puts a
// value not before the pivot at hi and one not after it at lo + 1, and the scans never swap those two
// positions); they keep every access inside the array whatever the data.
template <typename C>
int32_t quick_select(const Slice<C>& s, int32_t k) {
  uint8_t order[kOrderedMax];
  for (int32_t i = 0; i < s.n; ++i) order[i] = static_cast<uint8_t>(i);
  const auto at = [&](int32_t p) { return s[order[p]]; };
  const auto swap = [&](int32_t a, int32_t b) { swap_at(order + a, order + b); };
  int32_t lo = 0, hi = s.n - 1;
  for (;;) {
    if (hi <= lo) break;  // one element
    if (hi == lo + 1) {   // two elements
      if (after_or_nan(at(lo), at(hi))) swap(lo, hi);
      break;
    }
    swap((lo + hi) >> 1, lo + 1);  // median of three as the pivot, at lo
    if (after_or_nan(at(lo + 1), at(hi))) swap(lo + 1, hi);
    if (after_or_nan(at(lo), at(hi))) swap(lo, hi);
    if (after_or_nan(at(lo + 1), at(lo))) swap(lo + 1, lo);
    int32_t i = lo + 1, j = hi;
    const C pivot = at(lo);
    for (;;) {
      do ++i;
      while (i < hi && after_or_nan(pivot, at(i)));
      do --j;
      while (j > lo && after_or_nan(at(j), pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
  return order[k];
}

}  // namespace

Error aten_kthvalue_values(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_kthvalue_values & kRealTypes;
  DimSlices slices;
  if (!slices.init(ctx, 2, 3, 4)) return Error::KernelFailed;
  const int64_t k = ctx.int_arg(1);
  if (k < 1 || k > slices.n) return Error::KernelFailed;
  const int32_t position = static_cast<int32_t>(k - 1);
  const bool ok = slices.run<kSet>([&](const auto& s) {
    using C = decltype(s[0]);
    if (s.n <= kOrderedMax) return quick_select(s, position);
    return select_in_order(s.n, position, RankBefore<C>{s});
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
