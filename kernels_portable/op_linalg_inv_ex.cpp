// mcu-gen-kernel: op=aten::linalg_inv_ex.inverse fn=aten_linalg_inv_ex_inverse sig=TBOOX dtypes=float32 index_outputs=3
// aten::linalg_inv_ex.inverse(Tensor A, *, bool check_errors=False, Tensor(a!) inverse, Tensor(b!) info)
//     -> (Tensor(a!) inverse, Tensor(b!) info)
// torch.linalg.inv(_ex) / torch.inverse of A (..., n, n): A's LU factorization in `inverse`, inverted there
// (U^-1 L^-1 P^T, linalg_lu_common.h); info (int32) is the factorization's, as ATen's (which solves A X = I
// with A's factor). A singular A does not raise: info > 0 and the inverse is the inf / NaN the arithmetic
// gives; check_errors is ignored. The operator has no pivots output: this kernel keeps them on the stack,
// for n <= kMaxOrder (a larger A fails).
// Compiled without fp-contract (no fused multiply-adds): the same arithmetic on every target.
#pragma GCC optimize("fp-contract=off")
#include "linalg_lu_common.h"

namespace mcu {
namespace kernels {

namespace {
constexpr int32_t kMaxOrder = 128;  // 1-based pivots fit a uint8_t: kMaxOrder bytes of stack
}  // namespace

Error aten_linalg_inv_ex_inverse(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0);
  const TensorRef inverse = ctx.tensor(2);
  const TensorRef info = ctx.tensor(3);
  lu::MatrixBatch m;
  if (!lu::is_f32(a) || !m.init(a) || !m.square() || m.rows > kMaxOrder || !lu::is_f32(inverse) ||
      !inverse.same_shape(a) || !lu::is_info_of(info, a, m)) {
    return Error::KernelFailed;
  }
  const int32_t n = m.rows;
  uint8_t pivots[kMaxOrder];
  for (int32_t b = 0; b < m.count; ++b) {
    float* const x = inverse.f32() + b * m.size();
    lu::copy_matrix(a.f32() + b * m.size(), x, m.size());
    info.i32()[b] = lu::factor(x, n, n, pivots);
    lu::invert(x, pivots, n);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
