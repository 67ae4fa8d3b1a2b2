// mcu-gen-kernel: op=aten::mode.values fn=aten_mode_values sig=TIBOOX dtypes=float32,uint8,int8,int16,int32,int64,bool index_outputs=4
// aten::mode.values(Tensor self, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices)
//     -> (Tensor(a!) values, Tensor(b!) indices)
// The most frequent value along dim and the int64 index of one of its elements. ATen's CPU kernel
// (mode_kernel_impl, aten/src/ATen/native/cpu/TensorCompareKernel.cpp) sorts (value, index) pairs by value alone
// with std::sort, then walks the runs of equal values: a run longer than every one before it wins, so of equally
// frequent values the smallest; the index is that of the run's last element in std::sort's order of equal
// values. A NaN equals nothing (a run of its own) and compares false both ways, so where NaNs land, and which
// run wins, is std::sort's doing too. For a slice of up to kOrderedMax (256) elements this kernel runs
// libstdc++'s std::sort step for step (sort_common.h's introsort) on a stack array of element numbers: value and
// index are ATen's, NaN included. A longer slice has no scratch for that permutation: it counts each value's elements (n^2
// comparisons) and returns the most frequent value, the smallest on equal counts, and the index of its last
// element. Without NaN the value is ATen's, and so is the index when the mode occurs once (all values distinct);
// of a repeated mode it may be another of its elements. With NaN (each one a value of its own, after every number
// here) a long slice's value and index may differ from ATen's.
#include "select_common.h"

namespace mcu {
namespace kernels {

namespace {

constexpr int32_t kDepthMax = 16;  // std::sort's depth limit for kOrderedMax elements: 2 * log2(256)

// mode's comparison: by value alone (false both ways for a NaN, so no strict weak order then).
template <typename C>
struct ValueBefore {
  const Slice<C>& s;
  bool operator()(uint8_t i, uint8_t j) const { return s[i] < s[j]; }
};

// The element ATen's mode returns: the last element of the first longest run of equal values in std::sort's order.
template <typename C>
int32_t mode_sorted(const Slice<C>& s) {
  uint8_t order[kOrderedMax];
  for (int32_t i = 0; i < s.n; ++i) order[i] = static_cast<uint8_t>(i);
  introsort<kDepthMax>(order, order + s.n, ValueBefore<C>{s});  // std::sort, step for step (sort_common.h)
  int32_t best = order[0], best_run = 0, run = 0;
  for (int32_t r = 0; r < s.n; ++r) {
    ++run;
    if (r == s.n - 1 || s[order[r]] != s[order[r + 1]]) {
      if (run > best_run) {
        best_run = run;
        best = order[r];
      }
      run = 0;
    }
  }
  return best;
}

// A long slice's mode by counting: the most frequent value (the smaller on equal counts, NaN, each one a value
// of its own, after every number) and its last element.
template <typename C>
int32_t mode_counted(const Slice<C>& s) {
  int32_t best = 0, best_count = 0;
  for (int32_t i = 0; i < s.n; ++i) {
    const C v = s[i];
    int32_t count = 0, last = i;
    bool seen = false;  // an element before i has this value: counted then
    for (int32_t j = 0; j < s.n && !seen; ++j) {
      if (!(s[j] == v)) continue;
      seen = j < i;
      ++count;
      last = j;
    }
    if (seen) continue;
    if (is_nan_value(v)) count = 1;
    const C b = s[best];
    const bool smaller = !is_nan_value(v) && (is_nan_value(b) || v < b);
    if (count > best_count || (count == best_count && smaller)) {
      best = last;
      best_count = count;
    }
  }
  return best;
}

}  // namespace

Error aten_mode_values(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_mode_values & kAllTypes;
  DimSlices slices;
  if (!slices.init(ctx, 1, 2, 3)) return Error::KernelFailed;
  const bool ok = slices.run<kSet>([&](const auto& s) { return s.n <= kOrderedMax ? mode_sorted(s) : mode_counted(s); });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
