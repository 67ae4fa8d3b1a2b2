// mcu-gen-kernel: op=aten::linalg_solve_triangular.out fn=aten_linalg_solve_triangular_out sig=TTBBBOO dtypes=float32
// aten::linalg_solve_triangular.out(Tensor self, Tensor B, *, bool upper, bool left=True,
//     bool unitriangular=False, Tensor(a!) out) -> Tensor(a!)
// X with A X = B (left) or X A = B (left = false), A = self (..., n, n) triangular: only its upper (lower)
// triangle is read, and with unitriangular its diagonal is taken as 1 and not read. B is (..., n, k) for
// left, (..., k, n) for right; the batch dims of A and B broadcast (either may have fewer, or size 1), out
// is (broadcast batch..., B's last two dims). A zero on A's diagonal gives inf / NaN, as PyTorch's.
//
// Substitution in float32, X written into out (B copied there first): row i of X (left) or element j of a
// row of X (right) is B's minus the products with the elements already solved, in the order they were
// solved (LAPACK's trsm order), then divided by A's diagonal element.
// Compiled without fp-contract (no fused multiply-adds): every device rounds as the host build.
#pragma GCC optimize("fp-contract=off")
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "linalg_triangular.h"

namespace mcu {
namespace kernels {

namespace {

// Whether out's batch dims (all but its last two) are exactly those of a and b broadcast together.
bool is_broadcast_batch(const TensorRef& a, const TensorRef& b, const TensorRef& out) {
  const int32_t dims = out.dim - 2;
  const int32_t a_dims = a.dim - 2, b_dims = b.dim - 2;
  if (dims != (a_dims > b_dims ? a_dims : b_dims)) return false;
  for (int32_t d = 0; d < dims; ++d) {
    const int32_t a_size = d - (dims - a_dims) >= 0 ? a.sizes[d - (dims - a_dims)] : 1;
    const int32_t b_size = d - (dims - b_dims) >= 0 ? b.sizes[d - (dims - b_dims)] : 1;
    if (a_size != 1 && b_size != 1 && a_size != b_size) return false;
    if (out.sizes[d] != (a_size == 1 ? b_size : a_size)) return false;
  }
  return true;
}

// The offset (in floats) of the matrix of t (..., r, c) that goes with out's matrix number `index` when
// t's batch dims broadcast to out's (is_broadcast_batch checked).
size_t broadcast_matrix_offset(const TensorRef& t, const TensorRef& out, int32_t index) {
  const int32_t skipped = out.dim - t.dim;  // out's leading dims t does not have
  size_t offset = 0;
  size_t step = static_cast<size_t>(t.sizes[t.dim - 2]) * static_cast<size_t>(t.sizes[t.dim - 1]);
  for (int32_t d = out.dim - 3; d >= 0 && d - skipped >= 0; --d) {
    const int32_t i = index % out.sizes[d];
    index /= out.sizes[d];
    const int32_t t_size = t.sizes[d - skipped];
    if (t_size != 1) offset += static_cast<size_t>(i) * step;
    step *= static_cast<size_t>(t_size);
  }
  return offset;
}

// y[j] -= a * x[j]
void subtract_scaled(float* y, float a, const float* x, int32_t n) {
  for (int32_t j = 0; j < n; ++j) y[j] -= a * x[j];
}

// y[j] /= d
void divide(float* y, float d, int32_t n) {
  for (int32_t j = 0; j < n; ++j) y[j] /= d;
}

// A X = B, X (n x k) in x holding B: forward (lower) or backward (upper) substitution by rows.
void solve_left(const MatrixView& a, const MatrixView& x, int32_t n, int32_t k, bool upper, bool unit) {
  for (int32_t s = 0; s < n; ++s) {
    const int32_t i = upper ? n - 1 - s : s;
    float* xi = x.row(i);
    if (upper) {
      for (int32_t p = n - 1; p > i; --p) subtract_scaled(xi, a.at(i, p), x.row(p), k);
    } else {
      for (int32_t p = 0; p < i; ++p) subtract_scaled(xi, a.at(i, p), x.row(p), k);
    }
    if (!unit) divide(xi, a.at(i, i), k);
  }
}

// X A = B, X (k x n) in x holding B: each row of X alone. Upper A: element p is final once the elements
// before it are subtracted, then subtracted (times A's row p) from the elements after it; lower A: the same
// from the last element back.
void solve_right(const MatrixView& a, const MatrixView& x, int32_t n, int32_t k, bool upper, bool unit) {
  for (int32_t r = 0; r < k; ++r) {
    float* xr = x.row(r);
    for (int32_t s = 0; s < n; ++s) {
      const int32_t p = upper ? s : n - 1 - s;
      if (!unit) xr[p] /= a.at(p, p);
      if (upper) {
        subtract_scaled(xr + p + 1, xr[p], a.row(p) + p + 1, n - 1 - p);
      } else {
        subtract_scaled(xr, xr[p], a.row(p), p);
      }
    }
  }
}

}  // namespace

Error aten_linalg_solve_triangular_out(const KernelContext& ctx) {
  const TensorRef a_t = ctx.tensor(0);
  const TensorRef b_t = ctx.tensor(1);
  const bool upper = ctx.bool_arg(2);
  const bool left = ctx.bool_arg(3);
  const bool unit = ctx.bool_arg(4);
  const TensorRef out_t = ctx.tensor(5);
  MatrixBatch a, b, out;
  if (!as_matrix_batch(a_t, &a) || !as_matrix_batch(b_t, &b) || !as_matrix_batch(out_t, &out)) {
    return Error::KernelFailed;
  }
  const int32_t n = a.rows;
  if (a.cols != n || (left ? b.rows : b.cols) != n) return Error::KernelFailed;
  if (!ends_with_matrix(out_t, b.rows, b.cols) || !is_broadcast_batch(a_t, b_t, out_t)) return Error::KernelFailed;
  const int32_t k = left ? b.cols : b.rows;  // columns (left) or rows (right) of X
  if (out.size() == 0) return Error::Ok;     // empty matrices: nothing to solve
  for (int32_t m = 0; m < out.count; ++m) {
    const MatrixView am{a.data + broadcast_matrix_offset(a_t, out_t, m), n};
    const MatrixView xm{out.matrix(m), out.cols};
    memmove(xm.data, b.data + broadcast_matrix_offset(b_t, out_t, m), out.size() * sizeof(float));
    if (left) {
      solve_left(am, xm, n, k, upper, unit);
    } else {
      solve_right(am, xm, n, k, upper, unit);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
