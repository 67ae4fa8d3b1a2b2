// mcu-gen-kernel: op=aten::linalg_cholesky_ex.L fn=aten_linalg_cholesky_ex_l sig=TBBOOX dtypes=float32 index_outputs=4
// aten::linalg_cholesky_ex.L(Tensor self, *, bool upper=False, bool check_errors=False, Tensor(a!) L,
//     Tensor(b!) info) -> (Tensor(a!) L, Tensor(b!) info)
// The Cholesky factor of each matrix of self (..., n, n): lower L with self = L L^T, or with upper = true
// U with self = U^T U. torch.linalg.cholesky and cholesky_ex export to this operator.
//
// As LAPACK's potrf: only self's lower (upper) triangle is read, the other triangle of the result is
// zero. info (int32, one per matrix) is 0, or k when the leading minor of order k is not positive-definite
// (or holds NaN); the factorization then stops as PyTorch's CPU result shows it (LAPACK's unblocked,
// left-looking potf2): columns before k are the factor's, element (k-1, k-1) is the pivot that failed
// (self's diagonal element minus the squares of the factor's row: 0, negative or NaN), the rest of the
// triangle is self's. PyTorch raises in that case unless check_errors is false; a device cannot, so
// check_errors is not read and info says what the check would have.
//
// Column j: d = a_jj - sum_p l_jp^2, l_jj = sqrt(d), l_ij = (a_ij - sum_p l_ip l_jp) / l_jj, every sum
// in p order in float32 (LAPACK's order; it multiplies by 1 / l_jj where this divides, which rounds once).
// Compiled without fp-contract (no fused multiply-adds): every device rounds as the host build.
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "linalg_triangular.h"

namespace mcu {
namespace kernels {

namespace {

// The triangle being factored, seen as a lower triangle: element (i, j), j <= i. For upper = true it is
// U's upper triangle read transposed (U = L^T), so one algorithm serves both: only the steps differ.
struct LowerView {
  float* data;
  int32_t row_step;  // n for a lower factor, 1 for an upper one
  int32_t col_step;  // 1 for a lower factor, n for an upper one

  float& at(int32_t i, int32_t j) const {
    return data[static_cast<size_t>(i) * static_cast<size_t>(row_step) +
                static_cast<size_t>(j) * static_cast<size_t>(col_step)];
  }
};

// sum_{p < count} L(i, p) * L(j, p), in p order.
float row_dot(const LowerView& l, int32_t i, int32_t j, int32_t count) {
  float s = 0.0f;
  for (int32_t p = 0; p < count; ++p) s += l.at(i, p) * l.at(j, p);
  return s;
}

// Copies self's triangle (lower, or upper) of one n x n matrix into out and zeros the other one.
void copy_triangle(const float* self, float* out, int32_t n, bool upper) {
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(i) * static_cast<size_t>(n) + static_cast<size_t>(j);
      out[k] = (upper ? j >= i : j <= i) ? self[k] : 0.0f;
    }
  }
}

// Factors the triangle in place (it holds self's); returns LAPACK's info.
int32_t factor(const LowerView& l, int32_t n) {
  for (int32_t j = 0; j < n; ++j) {
    const float pivot = l.at(j, j) - row_dot(l, j, j, j);
    if (!(pivot > 0.0f)) {  // not positive, or NaN: stop, as potf2
      l.at(j, j) = pivot;
      return j + 1;
    }
    const float d = sqrtf(pivot);
    l.at(j, j) = d;
    for (int32_t i = j + 1; i < n; ++i) l.at(i, j) = (l.at(i, j) - row_dot(l, i, j, j)) / d;
  }
  return 0;
}

}  // namespace

Error aten_linalg_cholesky_ex_l(const KernelContext& ctx) {
  const TensorRef self = ctx.tensor(0);
  const bool upper = ctx.bool_arg(1);
  const TensorRef factor_out = ctx.tensor(3);
  const TensorRef info = ctx.tensor(4);
  MatrixBatch a, l;
  if (!as_matrix_batch(self, &a) || !as_matrix_batch(factor_out, &l)) return Error::KernelFailed;
  const int32_t n = a.rows;
  if (a.cols != n || !self.same_shape(factor_out)) return Error::KernelFailed;
  if (info.dtype != DType::Int32 || !info.is_contiguous() || !has_batch_of(info, 0, self, 2)) {
    return Error::KernelFailed;
  }
  int32_t* codes = info.i32();
  for (int32_t b = 0; b < a.count; ++b) {
    copy_triangle(a.matrix(b), l.matrix(b), n, upper);
    const LowerView view{l.matrix(b), upper ? 1 : n, upper ? n : 1};
    codes[b] = factor(view, n);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
