// nn.EmbeddingBag's operator, ATen's _embedding_bag and _embedding_bag_forward_only (one body: op_embedding_bag.cpp,
// op_embedding_bag_forward_only.cpp), as ATen's CPU kernel computes it.
//
// Bag b holds indices[offsets[b] .. offsets[b + 1]), the last bag all indices from its offset on (with
// include_last_offset, the offsets' last entry, which only counts the bags, too); entries equal to padding_idx (>= 0) are left out. out0[b] is the sum of
// the bag's weight rows (mode 0; times per_sample_weights[i] when given), their mean (mode 1: the sum divided by the
// bag's size, an empty bag 0), or their maximum per column (mode 2, the first row on ties, an empty bag 0). The other
// outputs are ATen's, in the indices' dtype: out1 the bag of each index (empty with per_sample_weights), out2 the
// bag sizes (0 in mode 0; with include_last_offset as long as the offsets, as torch.export's shapes say, the
// last 0), out3 for mode 2 the word index of each maximum (0 for an empty bag), else the bag sizes
// (0 in mode 0). Sums are sequential in float32 per column. Fails where ATen raises (an index outside the weight,
// offsets that do not start at 0 or that decrease or pass the end, per_sample_weights outside mode 0) and for
// shapes or dtypes that do not match.
#pragma once
#include <stdint.h>

#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

namespace embedding_bag {

// Index i of an int32 or int64 tensor (ATen: indices and offsets have one of these dtypes, the same).
inline int64_t index_at(const TensorRef& t, int32_t i) {
  return t.dtype == DType::Int32 ? static_cast<const int32_t*>(t.data)[i] : static_cast<const int64_t*>(t.data)[i];
}

inline void set_index(const TensorRef& t, int32_t i, int64_t v) {
  if (t.dtype == DType::Int32) {
    static_cast<int32_t*>(t.data)[i] = static_cast<int32_t>(v);
  } else {
    static_cast<int64_t*>(t.data)[i] = v;
  }
}

inline bool is_index_tensor(const TensorRef& t, DType dtype) {
  return t.dtype == dtype && (dtype == DType::Int32 || dtype == DType::Int64) && t.is_contiguous();
}

}  // namespace embedding_bag

inline Error embedding_bag_out(const KernelContext& ctx) {
  using embedding_bag::index_at;
  using embedding_bag::set_index;
  const TensorRef weight = ctx.tensor(0);
  const TensorRef indices = ctx.tensor(1);
  const TensorRef offsets = ctx.tensor(2);
  const int64_t mode = ctx.int_arg(4);
  const bool weighted = !ctx.is_none(6);
  const bool include_last = ctx.bool_arg(7);
  const int64_t padding = ctx.int_arg(8);
  const TensorRef out = ctx.tensor(9);
  const TensorRef bag_of = ctx.tensor(10);
  const TensorRef sizes = ctx.tensor(11);
  const TensorRef max_at = ctx.tensor(12);
  const DType ix = indices.dtype;
  if (weight.dtype != DType::Float || weight.dim != 2 || !weight.is_contiguous() || indices.dim != 1 ||
      offsets.dim != 1 || !embedding_bag::is_index_tensor(indices, ix) || !embedding_bag::is_index_tensor(offsets, ix) ||
      mode < 0 || mode > 2 || (weighted && mode != 0)) {
    return Error::KernelFailed;
  }
  const int32_t rows = weight.sizes[0];
  const int32_t d = weight.sizes[1];
  const int32_t n = indices.numel;
  const int32_t bags = include_last ? offsets.numel - 1 : offsets.numel;
  TensorRef psw;
  if (weighted) {
    psw = ctx.tensor(6);
    if (psw.dtype != DType::Float || !psw.same_shape(indices) || !psw.is_contiguous()) return Error::KernelFailed;
  }
  const int32_t max_cols = mode == 2 ? d : 1;
  if (bags < 0 || out.dtype != DType::Float || !out.is_contiguous() || out.dim != 2 || out.sizes[0] != bags ||
      out.sizes[1] != d || !embedding_bag::is_index_tensor(bag_of, ix) || (bag_of.numel != n && bag_of.numel != 0) ||
      !embedding_bag::is_index_tensor(sizes, ix) || (sizes.numel != bags && sizes.numel != offsets.numel) ||
      !embedding_bag::is_index_tensor(max_at, ix) || max_at.numel != bags * max_cols) {
    return Error::KernelFailed;
  }
  // Bag b is indices[offsets[b] .. end(b)): every range inside the indices, in order, from 0; every index a row
  // of the weight.
  auto end = [&](int32_t b) { return b + 1 < bags ? index_at(offsets, b + 1) : static_cast<int64_t>(n); };
  if (bags > 0 && index_at(offsets, 0) != 0) return Error::KernelFailed;
  for (int32_t b = 0; b < bags; ++b) {
    if (end(b) < index_at(offsets, b) || end(b) > n) return Error::KernelFailed;
  }
  for (int32_t i = 0; i < n; ++i) {
    const int64_t w = index_at(indices, i);
    if (w < 0 || w >= rows) return Error::KernelFailed;
  }
  const float* table = static_cast<const float*>(weight.data);
  float* y = static_cast<float*>(out.data);
  for (int32_t i = 0; i < bag_of.numel; ++i) set_index(bag_of, i, 0);  // (no bags: no index has one)
  for (int32_t b = bags; b < sizes.numel; ++b) set_index(sizes, b, 0);  // (include_last_offset: the meta's length)
  for (int32_t b = 0; b < bags; ++b) {
    const int32_t first = static_cast<int32_t>(index_at(offsets, b));
    const int32_t last = static_cast<int32_t>(end(b));
    float* row = y + static_cast<int64_t>(b) * d;
    for (int32_t c = 0; c < d; ++c) row[c] = 0.0f;
    for (int32_t c = 0; c < max_cols; ++c) set_index(max_at, b * max_cols + c, 0);
    int32_t count = 0;
    for (int32_t i = first; i < last; ++i) {
      if (bag_of.numel == n) set_index(bag_of, i, b);  // offset2bag: the bag of each index
      const int64_t word = index_at(indices, i);
      if (padding >= 0 && word == padding) continue;
      const float* w = table + word * d;
      if (mode == 2) {
        for (int32_t c = 0; c < d; ++c) {
          if (count == 0 || w[c] > row[c]) {
            row[c] = w[c];
            set_index(max_at, b * d + c, word);
          }
        }
      } else {
        const float scale = weighted ? static_cast<const float*>(psw.data)[i] : 1.0f;
        for (int32_t c = 0; c < d; ++c) row[c] += weighted ? scale * w[c] : w[c];
      }
      ++count;
    }
    if (mode == 1 && count > 0) {
      for (int32_t c = 0; c < d; ++c) row[c] /= static_cast<float>(count);
    }
    set_index(sizes, b, mode == 0 ? 0 : count);
    if (mode != 2) set_index(max_at, b, mode == 0 ? 0 : count);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
