// PyTorch's binary search of a value among sorted values (ATen's cus_lower_bound / cus_upper_bound), which
// torch.bucketize and torch.searchsorted share (op_bucketize_tensor.cpp, op_searchsorted_*.cpp).
#pragma once
#include <stdint.h>
#include <string.h>

#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// The first k in [0, n) whose value at(k) is >= value (right: > value), n when there is none. "not >=" / "not >"
// moves right, so a NaN value (and a NaN it meets) lands after every number.
template <typename C, typename At>
int64_t sorted_position(C value, At at, int32_t n, bool right) {
  int32_t start = 0;
  int32_t end = n;
  while (start < end) {
    const int32_t mid = start + ((end - start) >> 1);
    const C b = at(mid);
    const bool go_right = right ? !(b > value) : !(b >= value);
    if (go_right) {
      start = mid + 1;
    } else {
      end = mid;
    }
  }
  return start;
}

// The arguments of torch.searchsorted (both kernels): sorted_sequence, whose last dim holds the rows, the side,
// an optional sorter and out. init() checks them: false for anything ATen rejects (side "left" with right=True)
// and for a corrupt program (a sorter index outside its row, shapes or dtypes that do not match).
struct SearchArgs {
  TensorRef sequence;
  TensorRef sorter;
  TensorRef out;
  bool has_sorter = false;
  bool right = false;
  int32_t row = 0;  // elements in a row of sequence

  // `flags`: the argument position of out_int32 (right, side and sorter follow, then out).
  bool init(const KernelContext& ctx, int32_t flags) {
    sequence = ctx.tensor(0);
    out = ctx.tensor(flags + 4);
    right = ctx.bool_arg(flags + 1);
    if (!ctx.is_none(flags + 2)) {
      int32_t n = 0;
      const char* side = ctx.string_arg(flags + 2, &n);
      const bool side_right = n == 5 && memcmp(side, "right", 5) == 0;
      if (!side_right && !(n == 4 && memcmp(side, "left", 4) == 0)) return false;
      if (right && !side_right) return false;
      right = side_right;
    }
    if (out.dtype != (ctx.bool_arg(flags) ? DType::Int32 : DType::Int64) || !out.is_contiguous()) return false;
    if (sequence.dim < 1 || !sequence.is_contiguous()) return false;
    row = sequence.sizes[sequence.dim - 1];
    has_sorter = !ctx.is_none(flags + 3);
    if (!has_sorter) return true;
    sorter = ctx.tensor(flags + 3);
    if (sorter.dtype != DType::Int64 || !sorter.same_shape(sequence) || !sorter.is_contiguous()) return false;
    const int64_t* order = static_cast<const int64_t*>(sorter.data);
    for (int32_t i = 0; i < sorter.numel; ++i) {
      if (order[i] < 0 || order[i] >= row) return false;
    }
    return true;
  }

  // The position of `value` in row r (its first element at r * row), through the sorter when there is one.
  template <typename C>
  int64_t position(C value, LoadFn<C> load, int32_t r) const {
    const int32_t first = r * row;
    const int64_t* order = has_sorter ? static_cast<const int64_t*>(sorter.data) + first : nullptr;
    const void* data = sequence.data;
    if (order != nullptr) {
      return sorted_position<C>(value, [&](int32_t k) { return load(data, first + static_cast<int32_t>(order[k])); },
                                row, right);
    }
    return sorted_position<C>(value, [&](int32_t k) { return load(data, first + k); }, row, right);
  }
};

// The search position as out's dtype: int64, or int32 (out_int32).
inline void store_position(const TensorRef& out, int32_t i, int64_t k) {
  if (out.dtype == DType::Int32) {
    static_cast<int32_t*>(out.data)[i] = static_cast<int32_t>(k);
  } else {
    static_cast<int64_t*>(out.data)[i] = k;
  }
}

}  // namespace kernels
}  // namespace mcu
