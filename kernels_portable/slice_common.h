// A Python slice of one dimension, as slice_copy and slice_scatter take it:
// start/end None is the whole range, negative bounds count from the end,
// bounds past either end clamp, and the step must be positive.
#pragma once
#include <stdint.h>

#include "mcu/kernel.h"

namespace mcu {
namespace kernels {

struct SliceRange {
  int32_t start;
  int32_t step;
  int32_t length;  // elements the slice takes
};

// Python slice bound: negative counts from the end, then clamped to [0, n].
inline int32_t clamp_slice_bound(int64_t v, int32_t n) {
  if (v < 0) v += n;
  if (v < 0) return 0;
  return v > n ? n : static_cast<int32_t>(v);
}

// The slice of a dimension of size n given by the arguments start, end (each
// an optional Int) and step (an Int) of ctx. False when the step is not positive.
inline bool read_slice(const KernelContext& ctx, int32_t start_arg, int32_t end_arg, int32_t step_arg, int32_t n,
                       SliceRange* range) {
  const int64_t step = ctx.int_arg(step_arg);
  if (step <= 0) return false;
  const int32_t start = ctx.is_none(start_arg) ? 0 : clamp_slice_bound(ctx.int_arg(start_arg), n);
  int32_t end = ctx.is_none(end_arg) ? n : clamp_slice_bound(ctx.int_arg(end_arg), n);
  if (end < start) end = start;
  // A step longer than the dim takes one element at most; clamping it keeps
  // the arithmetic in 32 bits.
  range->start = start;
  range->step = step < n ? static_cast<int32_t>(step) : (n > 0 ? n : 1);
  range->length = (end - start + range->step - 1) / range->step;
  return true;
}

}  // namespace kernels
}  // namespace mcu
