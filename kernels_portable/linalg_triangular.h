// Shared by the fp32 linear-algebra kernels (op_linalg_cholesky_ex.cpp, op_linalg_solve_triangular.cpp,
// op_linalg_qr.cpp): a tensor of shape (..., rows, cols) read as a batch of row-major matrices, with its
// shape checked, and a row-major matrix view. Shapes only: the arithmetic lives in the kernels, each
// compiled without fused multiply-adds.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mcu/kernel.h"

namespace mcu {
namespace kernels {

// A contiguous fp32 tensor of shape (..., rows, cols): `count` matrices of rows * cols floats, one after
// the other.
struct MatrixBatch {
  float* data = nullptr;
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t count = 0;  // the product of the leading (batch) dims; 1 without any

  size_t size() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
  float* matrix(int32_t index) const { return data + static_cast<size_t>(index) * size(); }
};

// Reads t as a batch of matrices: fp32, contiguous, at least 2 dims. False for anything else (or for a
// batch count beyond int32).
inline bool as_matrix_batch(const TensorRef& t, MatrixBatch* out) {
  if (t.dtype != DType::Float || !t.is_contiguous() || t.dim < 2) return false;
  int64_t count = 1;
  for (int32_t d = 0; d + 2 < t.dim; ++d) {
    if (t.sizes[d] < 0) return false;
    count *= t.sizes[d];
    if (count > INT32_MAX) return false;
  }
  out->data = t.f32();
  out->rows = t.sizes[t.dim - 2];
  out->cols = t.sizes[t.dim - 1];
  out->count = static_cast<int32_t>(count);
  return out->rows >= 0 && out->cols >= 0;
}

// Whether t has exactly the batch dims `batch` (the first dims of `batch_of`, all but its last
// `batch_tail`) followed by `tail` more dims.
inline bool has_batch_of(const TensorRef& t, int32_t tail, const TensorRef& batch_of, int32_t batch_tail) {
  const int32_t dims = batch_of.dim - batch_tail;
  if (dims < 0 || t.dim != dims + tail) return false;
  for (int32_t d = 0; d < dims; ++d) {
    if (t.sizes[d] != batch_of.sizes[d]) return false;
  }
  return true;
}

// Whether t's last two dims are (rows, cols).
inline bool ends_with_matrix(const TensorRef& t, int32_t rows, int32_t cols) {
  return t.dim >= 2 && t.sizes[t.dim - 2] == rows && t.sizes[t.dim - 1] == cols;
}

// One row-major matrix: element (i, j) at data[i * stride + j].
struct MatrixView {
  float* data;
  int32_t stride;  // floats from one row to the next

  float& at(int32_t i, int32_t j) const {
    return data[static_cast<size_t>(i) * static_cast<size_t>(stride) + static_cast<size_t>(j)];
  }
  float* row(int32_t i) const { return data + static_cast<size_t>(i) * static_cast<size_t>(stride); }
};

}  // namespace kernels
}  // namespace mcu
