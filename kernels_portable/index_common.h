// Index tensors for the portable indexing kernels (embedding, index_select,
// gather, scatter, index.Tensor, index_put, ...). Indices come from the model's
// inputs as often as from its constants, so every index is checked: a negative
// index counts from the end (as in ATen), anything outside [-size, size) makes
// the kernel fail (Error::KernelFailed) instead of reading or writing outside
// its tensors.
#pragma once
#include <stdint.h>

#include "mcu/types.h"

namespace mcu {
namespace kernels {

inline bool is_index_dtype(DType t) { return t == DType::Int64 || t == DType::Int32; }

// Element i of an int64 or int32 tensor.
inline int64_t index_at(const TensorRef& index, int32_t i) {
  return index.dtype == DType::Int64 ? static_cast<const int64_t*>(index.data)[i]
                                     : static_cast<const int32_t*>(index.data)[i];
}

// Element i of `index` as a position in [0, size): negative values count from
// the end; false when out of range.
inline bool read_index(const TensorRef& index, int32_t i, int32_t size, int32_t* position) {
  int64_t v = index_at(index, i);
  if (v < 0) v += size;
  if (v < 0 || v >= size) return false;
  *position = static_cast<int32_t>(v);
  return true;
}

}  // namespace kernels
}  // namespace mcu
