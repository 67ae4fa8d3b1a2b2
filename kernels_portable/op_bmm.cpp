// mcu-gen-kernel: op=aten::bmm.out fn=aten_bmm_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64
//
// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// [B, M, K] @ [B, K, N] -> [B, M, N]; integer matrices in their dtype (int_matrix.h).
#include <stddef.h>

#include "f32_matrix.h"
#include "int_matrix.h"

namespace mcu::kernels {

Error aten_bmm_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_bmm_out & kIntTypes;
  TensorRef a = ctx.tensor(0);
  TensorRef b = ctx.tensor(1);
  TensorRef out = ctx.tensor(2);
  if (a.dim != 3 || b.dim != 3 || out.dim != 3) return Error::KernelFailed;
  const int32_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  if (b.size(0) != batch || b.size(1) != k) return Error::KernelFailed;
  if (out.size(0) != batch || out.size(1) != m || out.size(2) != n) return Error::KernelFailed;
  if constexpr (kSet != 0) {  // integer matrices only in a program that has them
    if (a.dtype != DType::Float) {
      return batch_matmul_int<kSet>(a, b, out, batch, m, k, n) ? Error::Ok : Error::KernelFailed;
    }
  }
  if (!is_f32_contiguous(a) || !is_f32_contiguous(b) || !is_f32_contiguous(out)) return Error::KernelFailed;
  for (int32_t i = 0; i < batch; ++i) {
    matmul_f32(a.f32() + static_cast<size_t>(i) * m * k, b.f32() + static_cast<size_t>(i) * k * n,
               out.f32() + static_cast<size_t>(i) * m * n, m, k, n);
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
