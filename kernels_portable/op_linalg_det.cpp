// mcu-gen-kernel: op=aten::_linalg_det.result fn=aten__linalg_det_result sig=TOOOX dtypes=float32 index_outputs=3
// aten::_linalg_det.result(Tensor A, *, Tensor(a!) result, Tensor(b!) LU, Tensor(c!) pivots)
//     -> (Tensor(a!) result, Tensor(b!) LU, Tensor(c!) pivots)
// torch.linalg.det / torch.det of A (..., n, n): det(P) times the product of U's diagonal, from the LU
// factorization (linalg_lu_common.h) of A^T, as ATen factors a contiguous A (det(A^T) = det(A)): LU and
// pivots (int32, 1-based) are those of A^T, as PyTorch returns them. A singular matrix's determinant is 0.
// Compiled without fp-contract (no fused multiply-adds): the same arithmetic on every target.
#pragma GCC optimize("fp-contract=off")
#include "linalg_lu_common.h"

namespace mcu {
namespace kernels {

Error aten__linalg_det_result(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0);
  const TensorRef result = ctx.tensor(1);
  const TensorRef lu_out = ctx.tensor(2);
  const TensorRef pivots = ctx.tensor(3);
  lu::MatrixBatch m;
  if (!lu::is_f32(a) || !m.init(a) || !m.square() || !lu::is_f32_per_matrix(result, a, m) ||
      !lu::is_factor_of(lu_out, pivots, a, m)) {
    return Error::KernelFailed;
  }
  for (int32_t b = 0; b < m.count; ++b) {
    lu::factor_transposed(a, lu_out, pivots.i32(), m, b);
    result.f32()[b] = lu::determinant(lu_out.f32() + b * m.size(), pivots.i32() + b * m.rows, m.rows);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
