// mcu-gen-kernel: op=aten::linalg_lu_factor_ex.out fn=aten_linalg_lu_factor_ex_out sig=TBBOOOX dtypes=float32 index_outputs=4,5
// aten::linalg_lu_factor_ex.out(Tensor A, *, bool pivot=True, bool check_errors=False, Tensor(a!) LU,
//     Tensor(b!) pivots, Tensor(c!) info) -> (Tensor(a!) LU, Tensor(b!) pivots, Tensor(c!) info)
// torch.linalg.lu_factor(_ex): A (..., m, n) = P L U with partial pivoting, as LAPACK's getrf gives it
// (linalg_lu_common.h): LU holds L below the diagonal and U on and above it; pivots (..., min(m, n)) int32,
// 1-based; info (...) int32, 0 or the step of the first exactly-zero pivot. check_errors is ignored (a device
// cannot raise: a singular matrix only sets info); pivot=False fails, as it does on PyTorch's CPU.
// Compiled without fp-contract (no fused multiply-adds): the same arithmetic on every target.
#pragma GCC optimize("fp-contract=off")
#include "linalg_lu_common.h"

namespace mcu {
namespace kernels {

Error aten_linalg_lu_factor_ex_out(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0);
  const TensorRef lu_out = ctx.tensor(3);
  const TensorRef pivots = ctx.tensor(4);
  const TensorRef info = ctx.tensor(5);
  lu::MatrixBatch m;
  if (!ctx.bool_arg(1) || !lu::is_f32(a) || !m.init(a) || !lu::is_factor_of(lu_out, pivots, a, m) ||
      !lu::is_info_of(info, a, m)) {
    return Error::KernelFailed;
  }
  const float* src = a.f32();
  float* dst = lu_out.f32();
  int32_t* piv = pivots.i32();
  int32_t* inf = info.i32();
  for (int32_t b = 0; b < m.count; ++b) {
    float* const lu = dst + b * m.size();
    lu::copy_matrix(src + b * m.size(), lu, m.size());
    inf[b] = lu::factor(lu, m.rows, m.cols, piv + b * m.steps());
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
