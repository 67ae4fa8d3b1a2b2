// Shared by the CMSIS-NN adapters (kernels_cmsis_nn/op_cmsis_nn_*.cpp).
//
// Each adapter implements one cortex_m:: operator with the same name and
// signature as its portable kernel (kernels_portable/op_cortex_m_*.cpp), so a
// program runs on either backend with bit-identical outputs. An adapter reads
// and checks its arguments like the portable kernel, then calls CMSIS-NN;
// where CMSIS-NN cannot compute a case exactly (shapes it does not support,
// requantization shifts outside its range) it calls the portable kernel
// instead, which is always linked beside it (mcu_gen/cmsis_nn.py).
//
// Scratch: kernels that need a CMSIS-NN buffer take it from their `scratch`
// tensor, planned in the arena ahead of time by mcu_gen (sizes per CMSIS-NN
// variant: mcu_gen/cmsis_nn.py scratch_bytes). The adapter asks CMSIS-NN's
// own arm_*_get_buffer_size() for the size it needs and fails with
// Error::KernelFailed when the tensor is smaller.
#pragma once
#include "arm_nnfunctions.h"
#include "int8_common.h"

namespace mcu {
namespace kernels {

// CMSIS-NN's arm_nn_requantize shifts right by at most 31 and left by at
// most 30 within 32 bits (docs/int8.md).
// The portable linear and batch-matmul kernels' limits (they report the
// errors): inner dimension and zero-point offsets that keep int32 sums exact.
constexpr int32_t kMaxMatmulK = 14563;
constexpr int64_t kMaxMatmulOffset = 256;

inline bool in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }
inline bool matmul_offset_ok(int64_t v) { return in_range(v, -kMaxMatmulOffset, kMaxMatmulOffset); }

// CMSIS-NN starts its int32 accumulator at the bias (or kernel sum) and adds
// products without wrapping: every bias must leave room for the largest sum of
// products, `max_sum`, or the sum overflows (undefined behaviour). Others run
// the portable kernel, which wraps.
inline bool bias_fits(const int32_t* bias, int32_t n, int64_t max_sum) {
  for (int32_t i = 0; bias != nullptr && i < n; ++i) {
    if (bias[i] > INT32_MAX - max_sum || bias[i] < INT32_MIN + max_sum) return false;
  }
  return true;
}
constexpr int64_t kMaxMatmulProduct = (128 + kMaxMatmulOffset) * (128 + kMaxMatmulOffset);

constexpr int32_t kCmsisMinShift = -31;
constexpr int32_t kCmsisMaxShift = 30;
inline bool cmsis_shift_ok(int64_t shift) { return shift >= kCmsisMinShift && shift <= kCmsisMaxShift; }

// A scratch tensor of at least `needed` bytes as a CMSIS-NN context;
// false when the planned tensor is too small.
inline bool scratch_context(const TensorRef& scratch, int32_t needed, cmsis_nn_context* c) {
  if (needed < 0 || scratch.nbytes() < static_cast<size_t>(needed)) return false;
  c->buf = needed > 0 ? scratch.data : nullptr;
  c->size = needed;
  return true;
}

// Same sizes and the same memory order (elementwise kernels walk memory).
inline bool same_layout(const TensorRef& a, const TensorRef& b) {
  if (!a.same_shape(b)) return false;
  for (int32_t p = 0; p < a.dim; ++p) {
    const uint32_t da = a.dim_order != nullptr ? a.dim_order[p] : p;
    const uint32_t db = b.dim_order != nullptr ? b.dim_order[p] : p;
    if (da != db) return false;
  }
  return true;
}

inline Error from_status(arm_cmsis_nn_status s) { return s == ARM_CMSIS_NN_SUCCESS ? Error::Ok : Error::KernelFailed; }

}  // namespace kernels
}  // namespace mcu
