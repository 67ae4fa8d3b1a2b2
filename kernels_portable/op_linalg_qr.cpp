// mcu-gen-kernel: op=aten::linalg_qr.out fn=aten_linalg_qr_out sig=TZOOX dtypes=float32
// aten::linalg_qr.out(Tensor A, str mode="reduced", *, Tensor(a!) Q, Tensor(b!) R) -> (Tensor(a!) Q, Tensor(b!) R)
// A = Q R for each matrix of A (..., m, n), k = min(m, n): mode "reduced" Q (..., m, k), R (..., k, n);
// "complete" Q (..., m, m), R (..., m, n); "r" R (..., k, n) and Q empty (shape (0,), as PyTorch's).
// torch.linalg.qr and torch.qr export to this operator. Any other mode string fails.
//
// Householder QR as LAPACK's geqrf + orgqr (PyTorch's CPU path), so the signs are PyTorch's: step i
// reflects column i's part x = [alpha; rest] to [beta; 0] with beta = -sign(alpha) * |x| (R's diagonal
// may be negative), H = I - tau v v^T, v = [1; rest / (alpha - beta)], tau = (beta - alpha) / beta; no
// reflection (tau = 0, beta = alpha) when rest is zero. Q = H_0 ... H_{k-1} applied to the first columns
// of the identity, built backwards (org2r). Everything in float32: norms scaled by a power of two (no
// square overflows or underflows; otherwise exactly the plain sum of squares), reflections applied a
// column at a time (w = v . column, column -= v * (tau w)), as LAPACK's larf in its order.
//
// Memory: no heap, no scratch beyond the outputs. The factorization runs in an output holding A's m x n
// copy (Q for a reduced A with m >= n, R otherwise), reflectors below its diagonal and each tau_i at Q's
// element (i, i) until Q's column i is built there. Mode "r" of a tall A (m > n) leaves only R's n x n:
// there R is computed without storing the reflectors (r_of_tall below), with the same reflections.
// Compiled without fp-contract (no fused multiply-adds): every device rounds as the host build.
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "linalg_triangular.h"

namespace mcu {
namespace kernels {

namespace {

enum class QrMode { Reduced, Complete, R };

bool parse_mode(const KernelContext& ctx, int32_t arg, QrMode* mode) {
  int32_t length = 0;
  const char* s = ctx.string_arg(arg, &length);
  if (s == nullptr) return false;
  if (length == 7 && memcmp(s, "reduced", 7) == 0) *mode = QrMode::Reduced;
  else if (length == 8 && memcmp(s, "complete", 8) == 0) *mode = QrMode::Complete;
  else if (length == 1 && s[0] == 'r') *mode = QrMode::R;
  else return false;
  return true;
}

// sqrt(extra^2 + sum of the squares of `count` values `step` floats apart). The values are scaled by a
// power of two near the largest magnitude, which is exact: the result is the plain sum of squares' wherever
// that neither overflows nor underflows, and right where it would. inf and NaN propagate.
float scaled_norm(const float* x, int32_t count, int32_t step, float extra) {
  float largest = fabsf(extra);
  for (int32_t r = 0; r < count; ++r) {
    const float m = fabsf(x[static_cast<size_t>(r) * static_cast<size_t>(step)]);
    if (m > largest || isnan(m)) largest = m;  // a NaN, once there, stays: no number compares above it
  }
  if (largest == 0.0f || !isfinite(largest)) return largest;
  int exponent = 0;
  frexpf(largest, &exponent);
  const float down = ldexpf(1.0f, -exponent);
  const float e = extra * down;
  float sum = e * e;
  for (int32_t r = 0; r < count; ++r) {
    const float v = x[static_cast<size_t>(r) * static_cast<size_t>(step)] * down;
    sum += v * v;
  }
  return ldexpf(sqrtf(sum), exponent);
}

// LAPACK's larfg: the reflector taking [alpha; x] to [beta; 0]; `scale` turns x into v's tail.
struct Reflector {
  float beta;
  float tau;
  float scale;
};

Reflector make_reflector(float alpha, float xnorm) {
  if (xnorm == 0.0f) return Reflector{alpha, 0.0f, 0.0f};  // H = I
  const float beta = -copysignf(hypotf(alpha, xnorm), alpha);
  return Reflector{beta, (beta - alpha) / beta, 1.0f / (alpha - beta)};
}

// Applies H = I - tau v v^T (v = [1; v(i+1..m-1, i)] in column i of v) to rows i.. of column j of w.
void reflect_column(const MatrixView& v, int32_t i, float tau, const MatrixView& w, int32_t j, int32_t m) {
  float s = w.at(i, j);
  for (int32_t r = i + 1; r < m; ++r) s += v.at(r, i) * w.at(r, j);
  const float t = -tau * s;
  w.at(i, j) += t;
  for (int32_t r = i + 1; r < m; ++r) w.at(r, j) += v.at(r, i) * t;
}

// LAPACK's geqr2 on the m x n matrix w, in place: R on and above the diagonal, each v's tail below it.
// After step i: with r_rows, R's row i (k x n, zero left of the diagonal) is copied there; with taus,
// tau_i goes to taus' element (i, i) (which may be w's, R's row being copied out first).
void householder_qr(const MatrixView& w, int32_t m, int32_t n, float* r_rows, const MatrixView* taus) {
  const int32_t k = m < n ? m : n;
  for (int32_t i = 0; i < k; ++i) {
    const Reflector h = make_reflector(w.at(i, i), scaled_norm(&w.at(i + 1 < m ? i + 1 : i, i), m - i - 1, w.stride, 0.0f));
    if (h.tau != 0.0f) {
      for (int32_t r = i + 1; r < m; ++r) w.at(r, i) *= h.scale;
      w.at(i, i) = h.beta;
      for (int32_t j = i + 1; j < n; ++j) reflect_column(w, i, h.tau, w, j, m);
    }
    if (r_rows != nullptr) {
      float* row = r_rows + static_cast<size_t>(i) * static_cast<size_t>(n);
      for (int32_t j = 0; j < n; ++j) row[j] = j < i ? 0.0f : w.at(i, j);
    }
    if (taus != nullptr) taus->at(i, i) = h.tau;
  }
}

// LAPACK's org2r: the m x cols matrix q = H_0 ... H_{k-1} [I; 0] from the reflectors below the diagonal of
// v's first k columns and tau_i at q's element (i, i). q may be v itself (cols == k): column i of Q is built
// over reflector i once the reflectors after it are applied.
void form_q(const MatrixView& q, int32_t m, int32_t cols, int32_t k, const MatrixView& v) {
  for (int32_t j = k; j < cols; ++j) {
    for (int32_t r = 0; r < m; ++r) q.at(r, j) = r == j ? 1.0f : 0.0f;
  }
  for (int32_t i = k - 1; i >= 0; --i) {
    const float tau = q.at(i, i);
    if (tau != 0.0f) {
      for (int32_t j = i + 1; j < cols; ++j) reflect_column(v, i, tau, q, j, m);
    }
    for (int32_t r = i + 1; r < m; ++r) q.at(r, i) = -tau * v.at(r, i);
    q.at(i, i) = 1.0f - tau;
    for (int32_t r = 0; r < i; ++r) q.at(r, i) = 0.0f;
  }
}

void zero_below_diagonal(const MatrixView& w, int32_t rows, int32_t cols) {
  for (int32_t r = 1; r < rows; ++r) {
    for (int32_t c = 0; c < r && c < cols; ++c) w.at(r, c) = 0.0f;
  }
}

// A plane rotation [c s; -s c] taking (a, b) to (h, 0), h = hypot(a, b) >= 0.
struct Rotation {
  float c;
  float s;
  float h;
};

Rotation rotation(float a, float b) {
  const float h = hypotf(a, b);
  if (h == 0.0f) return Rotation{1.0f, 0.0f, 0.0f};
  return Rotation{a / h, b / h, h};
}

// (u, t) <- (c u + s t, c t - s u)
void rotate(const Rotation& g, float* u, float* t) {
  const float u0 = *u, t0 = *t;
  *u = g.c * u0 + g.s * t0;
  *t = g.c * t0 - g.s * u0;
}

// Rotates a row into rows first.. of the upper triangle of b. The row's elements c >= first are held in
// column `tail` below the diagonal (element c at b(c, tail)): each is zeroed by a Givens rotation against
// b(c, c), which carries the rest of the row along.
void fold_row(const MatrixView& b, int32_t n, int32_t first, int32_t tail) {
  for (int32_t c = first; c < n; ++c) {
    const Rotation g = rotation(b.at(c, c), b.at(c, tail));
    b.at(c, c) = g.h;
    for (int32_t j = c + 1; j < n; ++j) rotate(g, &b.at(c, j), &b.at(j, tail));
  }
}

// Element (r, j), r and j >= i, of the top n rows of a tall A after the reflections of steps p < i: A's
// element minus v_p(r) * (tau_p w_p(j)), as LAPACK updates it (b: v_p's top tail in column p below the
// diagonal, tau_p w_p(j) in row p right of it).
float reflected_top(const float* a, const MatrixView& b, int32_t r, int32_t j, int32_t i) {
  float x = a[static_cast<size_t>(r) * static_cast<size_t>(b.stride) + static_cast<size_t>(j)];
  for (int32_t p = 0; p < i; ++p) x -= b.at(r, p) * b.at(p, j);
  return x;
}

// R (n x n, in b) of a tall A (m x n, m > n) with the reflections of householder_qr, without room for
// them. Householder QR depends on A's rows below the first n only through their Gram matrix (the
// reflections are orthogonal): an n x n upper triangular C with the same Gram stands in for them, and
// keeps that shape when C's row changed by a reflection is rotated back into the rows below it. The top n
// rows are not stored: row r after i reflections is A's row minus the updates, each v_p(r) times the row
// of products tau_p w_p (reflected_top). b holds, before step i: the v_p tails (p < i) below the diagonal,
// tau_p w_p right of it in row p with beta_p on the diagonal, C over rows and columns i.. on and above the
// diagonal; the rest of the lower triangle is scratch for the row being rotated. At the end each row of
// products becomes R's row: the reflected row minus them. Costs O(n^4 / 12 + m n^2) operations.
void r_of_tall(const float* a, int32_t m, int32_t n, const MatrixView& b) {
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t j = 0; j < n; ++j) b.at(r, j) = 0.0f;
  }
  // C: A's rows n.. rotated into the upper triangle one by one; the row is held in column 0 below the diagonal.
  for (int32_t r = n; r < m; ++r) {
    const float* row = a + static_cast<size_t>(r) * static_cast<size_t>(n);
    const Rotation g = rotation(b.at(0, 0), row[0]);
    b.at(0, 0) = g.h;
    for (int32_t j = 1; j < n; ++j) {
      b.at(j, 0) = row[j];
      rotate(g, &b.at(0, j), &b.at(j, 0));
    }
    fold_row(b, n, 1, 0);
  }
  for (int32_t i = 0; i < n; ++i) {
    // Column i below the diagonal: the reflected top rows, then v's tail.
    for (int32_t r = i + 1; r < n; ++r) b.at(r, i) = reflected_top(a, b, r, i, i);
    const float c_ii = b.at(i, i);  // C's column i has this element only
    const float xnorm = scaled_norm(&b.at(i + 1 < n ? i + 1 : i, i), n - i - 1, n, c_ii);
    const Reflector h = make_reflector(reflected_top(a, b, i, i, i), xnorm);
    for (int32_t r = i + 1; r < n; ++r) b.at(r, i) *= h.scale;
    const float v_c = c_ii * h.scale;
    Rotation g{1.0f, 0.0f, 0.0f};
    for (int32_t j = i + 1; j < n; ++j) {
      float tw = 0.0f;  // tau * (v . column j)
      if (h.tau != 0.0f) {
        float s = reflected_top(a, b, i, j, i);
        for (int32_t r = i + 1; r < n; ++r) s += b.at(r, i) * reflected_top(a, b, r, j, i);
        s += v_c * b.at(i, j);
        tw = h.tau * s;
      }
      float c_ij = b.at(i, j) - v_c * tw;  // C's row i, reflected
      b.at(i, j) = tw;
      // C's row i is rotated into row i + 1 as it comes, its rest kept in column i + 1 below the diagonal.
      if (j == i + 1) {
        g = rotation(b.at(j, j), c_ij);
        b.at(j, j) = g.h;
      } else {
        rotate(g, &b.at(i + 1, j), &c_ij);
        b.at(j, i + 1) = c_ij;
      }
    }
    if (i + 2 < n) fold_row(b, n, i + 2, i + 1);
    b.at(i, i) = h.beta;
  }
  // Rows of products to R's rows, the last first (row i reads the rows of products above it).
  for (int32_t i = n - 1; i >= 0; --i) {
    for (int32_t j = i + 1; j < n; ++j) b.at(i, j) = reflected_top(a, b, i, j, i) - b.at(i, j);
  }
  zero_below_diagonal(b, n, n);
}

// One matrix: a (m x n) to q and r as the mode says.
void qr_matrix(const float* a, int32_t m, int32_t n, QrMode mode, float* q, float* r) {
  const int32_t k = m < n ? m : n;
  const size_t size = static_cast<size_t>(m) * static_cast<size_t>(n) * sizeof(float);
  if (mode == QrMode::R && m > n) {
    r_of_tall(a, m, n, MatrixView{r, n});
    return;
  }
  if (mode == QrMode::Reduced && m >= n) {  // Q (m x n) holds the factorization, then Q itself
    const MatrixView w{q, n};
    if (size != 0) memcpy(q, a, size);
    householder_qr(w, m, n, r, &w);
    form_q(w, m, n, n, w);
    return;
  }
  // R (m x n: complete, or m <= n) holds the factorization; Q (m x m or none) the taus, then Q.
  const MatrixView w{r, n};
  if (size != 0) memcpy(r, a, size);
  if (mode == QrMode::R) {
    householder_qr(w, m, n, nullptr, nullptr);
  } else {
    const MatrixView qv{q, m};
    householder_qr(w, m, n, nullptr, &qv);
    form_q(qv, m, m, k, w);
  }
  zero_below_diagonal(w, m, n);
}

}  // namespace

Error aten_linalg_qr_out(const KernelContext& ctx) {
  const TensorRef a_t = ctx.tensor(0);
  QrMode mode = QrMode::Reduced;
  if (!parse_mode(ctx, 1, &mode)) return Error::KernelFailed;
  const TensorRef q_t = ctx.tensor(2);
  const TensorRef r_t = ctx.tensor(3);
  MatrixBatch a, q, r;
  if (!as_matrix_batch(a_t, &a) || !as_matrix_batch(r_t, &r)) return Error::KernelFailed;
  const int32_t m = a.rows, n = a.cols, k = m < n ? m : n;
  const int32_t r_rows = mode == QrMode::Complete ? m : k;
  if (!has_batch_of(r_t, 2, a_t, 2) || !ends_with_matrix(r_t, r_rows, n)) return Error::KernelFailed;
  if (mode == QrMode::R) {
    if (q_t.numel != 0) return Error::KernelFailed;
  } else {
    const int32_t q_cols = mode == QrMode::Complete ? m : k;
    if (!as_matrix_batch(q_t, &q) || !has_batch_of(q_t, 2, a_t, 2) || !ends_with_matrix(q_t, m, q_cols)) {
      return Error::KernelFailed;
    }
  }
  for (int32_t b = 0; b < a.count; ++b) {
    qr_matrix(a.matrix(b), m, n, mode, mode == QrMode::R ? nullptr : q.matrix(b), r.matrix(b));
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
