// tril / triu: keep the elements of the last two dims (rows i, columns j) on
// one side of a diagonal, zero the rest (all-zero bytes are 0, 0.0f and false
// in every dtype, so the kernels copy raw elements).
#pragma once
#include <string.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// lower: keep j - i <= diagonal (tril); else keep j - i >= diagonal (triu).
// out may be self (the plan put them at one address).
inline Error keep_triangle(const KernelContext& ctx, bool lower) {
  const TensorRef in = ctx.tensor(0);
  int64_t diagonal = ctx.int_arg(1);
  const TensorRef out = ctx.tensor(2);
  if (!copyable_pair(in, out) || !in.same_shape(out) || in.dim < 2) return Error::KernelFailed;
  if (in.numel == 0) return Error::Ok;
  const int32_t rows = in.sizes[in.dim - 2];
  const int32_t cols = in.sizes[in.dim - 1];
  // Beyond these bounds every row keeps all or nothing (and i + diagonal cannot overflow).
  diagonal = diagonal > cols ? cols : (diagonal < -rows - 1 ? -rows - 1 : diagonal);
  const size_t esize = element_size(in);
  const int32_t matrices = in.numel / (rows * cols);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  for (int32_t m = 0; m < matrices; ++m) {
    for (int32_t i = 0; i < rows; ++i) {
      // Kept columns of row i: [begin, end).
      int64_t begin = lower ? 0 : i + diagonal;
      int64_t end = lower ? i + diagonal + 1 : cols;
      begin = begin < 0 ? 0 : (begin > cols ? cols : begin);
      end = end < begin ? begin : (end > cols ? cols : end);
      const size_t row = (static_cast<size_t>(m) * rows + i) * cols * esize;
      const size_t b = static_cast<size_t>(begin) * esize, e = static_cast<size_t>(end) * esize;
      memset(dst + row, 0, b);
      move_bytes(dst + row + b, src + row + b, e - b);
      memset(dst + row + e, 0, cols * esize - e);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
