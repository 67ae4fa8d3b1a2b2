// mcu-gen-kernel: op=aten::_linalg_slogdet.sign fn=aten__linalg_slogdet_sign sig=TOOOOX dtypes=float32 index_outputs=4
// aten::_linalg_slogdet.sign(Tensor A, *, Tensor(a!) sign, Tensor(b!) logabsdet, Tensor(c!) LU,
//     Tensor(d!) pivots) -> (Tensor(a!) sign, Tensor(b!) logabsdet, Tensor(c!) LU, Tensor(d!) pivots)
// torch.linalg.slogdet (and torch.logdet, which the export computes from it) of A (..., n, n): the sign of
// the determinant (0 for a singular matrix) and log|det| (-inf for a singular one), from the LU factorization
// (linalg_lu_common.h) of A^T, as ATen factors a contiguous A: sign = det(P) times the product of the signs of
// U's diagonal, logabsdet = the sum of log|U[i][i]|. LU and pivots (int32, 1-based) are those of A^T.
// Compiled without fp-contract (no fused multiply-adds): the same arithmetic on every target.
#pragma GCC optimize("fp-contract=off")
#include "linalg_lu_common.h"

namespace mcu {
namespace kernels {

Error aten__linalg_slogdet_sign(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0);
  const TensorRef sign = ctx.tensor(1);
  const TensorRef logabsdet = ctx.tensor(2);
  const TensorRef lu_out = ctx.tensor(3);
  const TensorRef pivots = ctx.tensor(4);
  lu::MatrixBatch m;
  if (!lu::is_f32(a) || !m.init(a) || !m.square() || !lu::is_f32_per_matrix(sign, a, m) ||
      !lu::is_f32_per_matrix(logabsdet, a, m) || !lu::is_factor_of(lu_out, pivots, a, m)) {
    return Error::KernelFailed;
  }
  for (int32_t b = 0; b < m.count; ++b) {
    lu::factor_transposed(a, lu_out, pivots.i32(), m, b);
    lu::sign_and_log_abs_determinant(lu_out.f32() + b * m.size(), pivots.i32() + b * m.rows, m.rows, sign.f32() + b,
                                     logabsdet.f32() + b);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
