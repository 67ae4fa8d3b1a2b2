// mcu-gen-kernel: op=aten::_linalg_solve_ex.result fn=aten__linalg_solve_ex_result sig=TTBBOOOOX dtypes=float32 index_outputs=6,7
// aten::_linalg_solve_ex.result(Tensor A, Tensor B, *, bool left=True, bool check_errors=False,
//     Tensor(a!) result, Tensor(b!) LU, Tensor(c!) pivots, Tensor(d!) info)
//     -> (Tensor(a!) result, Tensor(b!) LU, Tensor(c!) pivots, Tensor(d!) info)
// torch.linalg.solve(_ex): X with A X = B (left), or X A = B (left=False), A (..., n, n), from A's LU
// factorization (linalg_lu_common.h; LU, pivots (int32, 1-based) and info (int32) are A's, as ATen returns
// them). B is a matrix (..., n, k) (left=False: (..., k, n)), or, as in numpy, a vector: B of shape (n,), or
// of shape A.shape[:-1]; the vector case only with left. Batch dims broadcast between A and B (LU, pivots
// and info keep A's). A singular A does not raise: info > 0 and X is the inf / NaN the arithmetic gives;
// check_errors is ignored.
// Compiled without fp-contract (no fused multiply-adds): the same arithmetic on every target.
#pragma GCC optimize("fp-contract=off")
#include "linalg_lu_common.h"

namespace mcu {
namespace kernels {

namespace {

// The batch dims of A and B, aligned at the right and broadcast: the result's.
struct BroadcastBatch {
  const int32_t* a_sizes;
  int32_t a_dims;
  const int32_t* b_sizes;
  int32_t b_dims;

  int32_t dims() const { return a_dims > b_dims ? a_dims : b_dims; }
  // The size of an operand's dim aligned with the result's dim d (1 where it has none).
  int32_t operand_size(const int32_t* sizes, int32_t n, int32_t d) const {
    const int32_t i = d - (dims() - n);
    return i < 0 ? 1 : sizes[i];
  }
  // The result's size of dim d, or -1 where A's and B's sizes do not broadcast.
  int32_t size(int32_t d) const {
    const int32_t sa = operand_size(a_sizes, a_dims, d);
    const int32_t sb = operand_size(b_sizes, b_dims, d);
    if (sa == sb || sb == 1) return sa;
    return sa == 1 ? sb : -1;
  }
  // The batch index of A (*ia) and of B (*ib) that the result's batch index r reads.
  void operands(int32_t r, int32_t* ia, int32_t* ib) const {
    int32_t a = 0, b = 0, a_stride = 1, b_stride = 1;
    for (int32_t d = dims() - 1; d >= 0; --d) {
      const int32_t coord = r % size(d);
      r /= size(d);
      const int32_t sa = operand_size(a_sizes, a_dims, d);
      const int32_t sb = operand_size(b_sizes, b_dims, d);
      if (sa != 1) a += coord * a_stride;
      if (sb != 1) b += coord * b_stride;
      a_stride *= sa;
      b_stride *= sb;
    }
    *ia = a;
    *ib = b;
  }
};

// ATen's linalg_solve_is_vector_rhs: B is a vector of shape (n,), or of shape A.shape[:-1].
bool is_vector_rhs(const TensorRef& a, const TensorRef& b) {
  if (b.dim == 1) return true;
  if (b.dim != a.dim - 1) return false;
  for (int32_t d = 0; d < b.dim; ++d) {
    if (b.sizes[d] != a.sizes[d]) return false;
  }
  return true;
}

}  // namespace

Error aten__linalg_solve_ex_result(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0);
  const TensorRef rhs = ctx.tensor(1);
  const bool left = ctx.bool_arg(2);
  const TensorRef result = ctx.tensor(4);
  const TensorRef lu_out = ctx.tensor(5);
  const TensorRef pivots = ctx.tensor(6);
  const TensorRef info = ctx.tensor(7);
  lu::MatrixBatch m;
  if (!lu::is_f32(a) || !m.init(a) || !m.square() || !lu::is_factor_of(lu_out, pivots, a, m) ||
      !lu::is_info_of(info, a, m) || !lu::is_f32(rhs) || !lu::is_f32(result)) {
    return Error::KernelFailed;
  }
  const int32_t n = m.rows;
  // B as a batch of b_rows x b_cols matrices (a vector: n x 1); X has B's matrix shape.
  const bool vector = is_vector_rhs(a, rhs);
  if (vector && !left) return Error::KernelFailed;  // (ATen refuses it)
  if (!vector && rhs.dim < 2) return Error::KernelFailed;
  const int32_t matrix_dims = vector ? 1 : 2;
  const int32_t b_rows = rhs.sizes[rhs.dim - matrix_dims];
  const int32_t b_cols = vector ? 1 : rhs.sizes[rhs.dim - 1];
  if ((left ? b_rows : b_cols) != n) return Error::KernelFailed;
  const BroadcastBatch batch{a.sizes, m.batch_dims, rhs.sizes, rhs.dim - matrix_dims};
  if (result.dim != batch.dims() + matrix_dims) return Error::KernelFailed;
  int64_t count = 1;
  for (int32_t d = 0; d < batch.dims(); ++d) {
    if (batch.size(d) < 0 || result.sizes[d] != batch.size(d)) return Error::KernelFailed;
    count *= batch.size(d);
    if (count > INT32_MAX) return Error::KernelFailed;
  }
  if (result.sizes[batch.dims()] != b_rows || (!vector && result.sizes[batch.dims() + 1] != b_cols)) {
    return Error::KernelFailed;
  }

  int32_t* const piv = pivots.i32();
  for (int32_t k = 0; k < m.count; ++k) {
    float* const lu = lu_out.f32() + k * m.size();
    lu::copy_matrix(a.f32() + k * m.size(), lu, m.size());
    info.i32()[k] = lu::factor(lu, n, n, piv + k * n);
  }
  const int32_t b_size = b_rows * b_cols;
  for (int32_t r = 0; r < static_cast<int32_t>(count); ++r) {
    int32_t ia, ib;
    batch.operands(r, &ia, &ib);
    const float* const lu = lu_out.f32() + ia * m.size();
    float* const x = result.f32() + r * b_size;
    lu::copy_matrix(rhs.f32() + ib * b_size, x, b_size);
    if (left) {
      for (int32_t j = 0; j < b_cols; ++j) lu::solve(lu, piv + ia * n, n, x + j, b_cols);  // column j of X
    } else {
      // Row i of X A = B: A^T x_i = b_i.
      for (int32_t i = 0; i < b_rows; ++i) lu::solve_transposed(lu, piv + ia * n, n, x + i * n, 1);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
