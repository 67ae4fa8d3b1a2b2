// The LU family of torch.linalg in float32 (op_linalg_lu_factor_ex.cpp, op_linalg_det.cpp,
// op_linalg_slogdet.cpp, op_linalg_solve_ex.cpp, op_linalg_inv_ex.cpp): one LU factorization with partial
// pivoting, as LAPACK's getrf computes it, and what the kernels build on it.
//
// Matrices are row-major, contiguous, batched over the leading dims ((..., rows, cols)). factor() overwrites a
// matrix with P L U: L unit lower (its 1s not stored) below the diagonal, U on and above it; pivots[k] (1-based,
// as LAPACK and PyTorch give them) is the row that step k swapped with row k: the row of the largest |value| in
// column k at or below the diagonal, the first on ties. A zero pivot is not an error: the step scales nothing,
// the factorization goes on and info is the 1-based step of the first one (LAPACK's info > 0); solving or
// inverting with such a factor divides by zero and gives inf / NaN, as the arithmetic does.
//
// No heap, no recursion; the kernels work in their output tensors (a factor in the LU output, an inverse in
// its own output). Every product and every sum is rounded (no fused multiply-add), on every target.
#pragma once
#include <math.h>
#include <stdint.h>

#include "mcu/kernel.h"

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

namespace mcu {
namespace kernels {
namespace lu {

// -- shapes ------------------------------------------------------------------------------------

inline bool is_f32(const TensorRef& t) { return t.dtype == DType::Float && t.is_contiguous(); }
inline bool is_i32(const TensorRef& t) { return t.dtype == DType::Int32 && t.is_contiguous(); }

// The matrices of a tensor (..., rows, cols): how many, and their sizes.
struct MatrixBatch {
  int32_t count = 0;
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t batch_dims = 0;  // the leading dims

  // False for a tensor of fewer than 2 dims (or a batch too large to count).
  bool init(const TensorRef& t) {
    if (t.dim < 2) return false;
    batch_dims = t.dim - 2;
    rows = t.sizes[t.dim - 2];
    cols = t.sizes[t.dim - 1];
    int64_t n = 1;
    for (int32_t d = 0; d < batch_dims; ++d) {
      n *= t.sizes[d];
      if (n > INT32_MAX) return false;
    }
    count = static_cast<int32_t>(n);
    return true;
  }
  bool square() const { return rows == cols; }
  int32_t size() const { return rows * cols; }  // elements of one matrix
  int32_t steps() const { return rows < cols ? rows : cols; }
};

// Whether t's sizes are the first `lead` sizes of `like`, then `tail` (n_tail sizes).
inline bool has_sizes(const TensorRef& t, const TensorRef& like, int32_t lead, const int32_t* tail, int32_t n_tail) {
  if (lead > like.dim || t.dim != lead + n_tail) return false;
  for (int32_t d = 0; d < lead; ++d) {
    if (t.sizes[d] != like.sizes[d]) return false;
  }
  for (int32_t d = 0; d < n_tail; ++d) {
    if (t.sizes[lead + d] != tail[d]) return false;
  }
  return true;
}

// The int32 outputs of a factorization of the matrices of `a`: pivots (..., min(rows, cols)), info (...).
inline bool is_pivots_of(const TensorRef& pivots, const TensorRef& a, const MatrixBatch& m) {
  const int32_t k = m.steps();
  return is_i32(pivots) && has_sizes(pivots, a, m.batch_dims, &k, 1);
}
inline bool is_info_of(const TensorRef& info, const TensorRef& a, const MatrixBatch& m) {
  return is_i32(info) && has_sizes(info, a, m.batch_dims, nullptr, 0);
}
// A float32 output of one value per matrix of `a` (...): det's result, slogdet's sign and logabsdet.
inline bool is_f32_per_matrix(const TensorRef& t, const TensorRef& a, const MatrixBatch& m) {
  return is_f32(t) && has_sizes(t, a, m.batch_dims, nullptr, 0);
}
// The outputs of a factorization of `a`: LU (a's shape, float32) and its pivots.
inline bool is_factor_of(const TensorRef& lu_out, const TensorRef& pivots, const TensorRef& a, const MatrixBatch& m) {
  return is_f32(lu_out) && lu_out.same_shape(a) && is_pivots_of(pivots, a, m);
}

// -- the factorization -------------------------------------------------------------------------

inline void copy_matrix(const float* src, float* dst, int32_t count) {
  for (int32_t i = 0; i < count; ++i) dst[i] = src[i];
}

// dst (n x n) = src^T.
inline void copy_transposed(const float* src, float* dst, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j < n; ++j) dst[i * n + j] = src[j * n + i];
  }
}

inline void swap_values(float* a, float* b) {
  const float t = *a;
  *a = *b;
  *b = t;
}

// a (rows x cols) = P L U in place, LAPACK's getrf (right-looking, as its unblocked getf2): pivots[k] =
// 1 + the pivot row of step k, for the min(rows, cols) steps. Returns info: 0, or the step (from 1) of the
// first pivot that is exactly 0. Pivot is the index type of the caller's pivot array.
template <typename Pivot>
int32_t factor(float* a, int32_t rows, int32_t cols, Pivot* pivots) {
  const int32_t steps = rows < cols ? rows : cols;
  int32_t info = 0;
  for (int32_t k = 0; k < steps; ++k) {
    float* const row_k = a + k * cols;
    // The pivot row: the largest |a[i][k]|, i >= k, the first on ties (and a NaN never replaces a number,
    // as LAPACK's isamax compares).
    int32_t p = k;
    float largest = fabsf(row_k[k]);
    for (int32_t i = k + 1; i < rows; ++i) {
      const float v = fabsf(a[i * cols + k]);
      if (v > largest) {
        largest = v;
        p = i;
      }
    }
    pivots[k] = static_cast<Pivot>(p + 1);
    if (a[p * cols + k] != 0.0f) {
      if (p != k) {
        float* const row_p = a + p * cols;
        for (int32_t j = 0; j < cols; ++j) swap_values(row_k + j, row_p + j);
      }
      const float pivot = row_k[k];
      for (int32_t i = k + 1; i < rows; ++i) a[i * cols + k] /= pivot;  // the multipliers: column k of L
    } else if (info == 0) {
      info = k + 1;  // (the column is all zeros at and below the diagonal: its multipliers stay 0)
    }
    // The Schur complement: the rows below, minus multiplier times the pivot row.
    for (int32_t i = k + 1; i < rows; ++i) {
      float* const row_i = a + i * cols;
      const float l = row_i[k];
      for (int32_t j = k + 1; j < cols; ++j) row_i[j] -= l * row_k[j];
    }
  }
  return info;
}

// Matrix b of the square A transposed into matrix b of LU and factored there, its pivots into row b of pivots: what
// det and slogdet factor, as ATen factors a contiguous A (det(A^T) = det(A); LU and pivots are those of A^T).
inline void factor_transposed(const TensorRef& a, const TensorRef& lu_out, int32_t* pivots, const MatrixBatch& m,
                              int32_t b) {
  float* const lu = lu_out.f32() + b * m.size();
  copy_transposed(a.f32() + b * m.size(), lu, m.rows);
  factor(lu, m.rows, m.rows, pivots + b * m.rows);
}

// -- using a factor (lu: n x n, as factor() left it; pivots from factor()) -------------------------

// A x = b in place: x holds b (n values, `stride` floats apart). P L U x = b: b's rows interchanged in the
// order the steps made them, L y = that (forward), U x = y (backward); LAPACK's getrs, no transpose.
template <typename Pivot>
void solve(const float* lu, const Pivot* pivots, int32_t n, float* x, int32_t stride) {
  for (int32_t k = 0; k < n; ++k) {
    const int32_t p = static_cast<int32_t>(pivots[k]) - 1;
    if (p != k) swap_values(x + k * stride, x + p * stride);
  }
  for (int32_t i = 1; i < n; ++i) {
    float s = x[i * stride];
    for (int32_t j = 0; j < i; ++j) s -= lu[i * n + j] * x[j * stride];
    x[i * stride] = s;
  }
  for (int32_t i = n - 1; i >= 0; --i) {
    float s = x[i * stride];
    for (int32_t j = n - 1; j > i; --j) s -= lu[i * n + j] * x[j * stride];
    x[i * stride] = s / lu[i * n + i];
  }
}

// A^T x = b in place (x as for solve()). A^T = U^T L^T P^T: U^T z = b (forward), L^T w = z (backward),
// x = P w (the interchanges in reverse order); LAPACK's getrs, transposed.
template <typename Pivot>
void solve_transposed(const float* lu, const Pivot* pivots, int32_t n, float* x, int32_t stride) {
  for (int32_t i = 0; i < n; ++i) {
    float s = x[i * stride];
    for (int32_t j = 0; j < i; ++j) s -= lu[j * n + i] * x[j * stride];
    x[i * stride] = s / lu[i * n + i];
  }
  for (int32_t i = n - 2; i >= 0; --i) {
    float s = x[i * stride];
    for (int32_t j = i + 1; j < n; ++j) s -= lu[j * n + i] * x[j * stride];
    x[i * stride] = s;
  }
  for (int32_t k = n - 1; k >= 0; --k) {
    const int32_t p = static_cast<int32_t>(pivots[k]) - 1;
    if (p != k) swap_values(x + k * stride, x + p * stride);
  }
}

// A^-1 = U^-1 L^-1 P^T in place of A's factor (a: n x n), without scratch memory: U^-1 over U, L^-1 over L
// (both triangular inverses in place), their product over both, then P^T: column interchanges in reverse order
// (LAPACK's getri computes the same product, solving X L = U^-1 with a column of scratch instead).
template <typename Pivot>
void invert(float* a, const Pivot* pivots, int32_t n) {
  // U^-1, column j from the inverse of U's leading j x j block (columns < j, done):
  // (U^-1)[i][j] = -(sum_{i <= k < j} (U^-1)[i][k] U[k][j]) / U[j][j]. Rows i ascending: U[k][j], k > i, are
  // still U's when row i reads them.
  for (int32_t j = 0; j < n; ++j) {
    const float u = a[j * n + j];
    for (int32_t i = 0; i < j; ++i) {
      float s = 0.0f;
      for (int32_t k = i; k < j; ++k) s += a[i * n + k] * a[k * n + j];
      a[i * n + j] = -s / u;
    }
    a[j * n + j] = 1.0f / u;
  }
  // L^-1 (unit lower), row i from the rows above (done): (L^-1)[i][c] = -(L[i][c] + sum_{c < k < i} L[i][k]
  // (L^-1)[k][c]). Columns c ascending: L[i][k], k > c, are still L's when column c reads them.
  for (int32_t i = 1; i < n; ++i) {
    float* const row = a + i * n;
    for (int32_t c = 0; c < i; ++c) {
      float s = row[c];
      for (int32_t k = c + 1; k < i; ++k) s += row[k] * a[k * n + c];
      row[c] = -s;
    }
  }
  // X = U^-1 L^-1: X[r][c] = sum_{k >= max(r, c)} (U^-1)[r][k] (L^-1)[k][c], L^-1's diagonal 1. In row-major
  // order every element X[r][c] reads, (r, k >= c) and (k >= r, c), is still a factor's when it is written.
  for (int32_t r = 0; r < n; ++r) {
    float* const row = a + r * n;
    for (int32_t c = 0; c < n; ++c) {
      float s;
      int32_t k;
      if (c >= r) {
        s = row[c];  // k = c: (U^-1)[r][c] times 1
        k = c + 1;
      } else {
        s = 0.0f;
        k = r;
      }
      for (; k < n; ++k) s += row[k] * a[k * n + c];
      row[c] = s;
    }
  }
  // X P^T: P = P_0 P_1 ... P_{n-1} (P_k interchanges k and pivots[k] - 1), so columns, last step first.
  for (int32_t k = n - 1; k >= 0; --k) {
    const int32_t p = static_cast<int32_t>(pivots[k]) - 1;
    if (p == k) continue;
    for (int32_t r = 0; r < n; ++r) swap_values(a + r * n + k, a + r * n + p);
  }
}

// det(P): -1 for an odd number of interchanges, else 1.
template <typename Pivot>
float permutation_sign(const Pivot* pivots, int32_t n) {
  bool odd = false;
  for (int32_t k = 0; k < n; ++k) {
    if (static_cast<int32_t>(pivots[k]) != k + 1) odd = !odd;
  }
  return odd ? -1.0f : 1.0f;
}

// det(A) = det(P) * prod(diag(U)), the product in order (ATen's _linalg_det).
template <typename Pivot>
float determinant(const float* lu, const Pivot* pivots, int32_t n) {
  float product = 1.0f;
  for (int32_t i = 0; i < n; ++i) product *= lu[i * n + i];
  return permutation_sign(pivots, n) * product;
}

// sign(det(A)) = det(P) * prod(sgn(diag(U))) (sgn 0 for 0 and NaN, as torch.sgn); log|det(A)| = sum of
// log|U[i][i]| (-inf for a singular matrix): ATen's _linalg_slogdet.
template <typename Pivot>
void sign_and_log_abs_determinant(const float* lu, const Pivot* pivots, int32_t n, float* sign, float* log_abs) {
  float s = 1.0f;
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    const float d = lu[i * n + i];
    s *= d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
    sum += logf(fabsf(d));
  }
  *sign = s * permutation_sign(pivots, n);
  *log_abs = sum;
}

}  // namespace lu
}  // namespace kernels
}  // namespace mcu

#pragma GCC pop_options
