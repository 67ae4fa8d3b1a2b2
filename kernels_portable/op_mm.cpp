// mcu-gen-kernel: op=aten::mm.out fn=aten_mm_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64
//
// aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// [M, K] @ [K, N] -> [M, N]; integer matrices in their dtype (int_matrix.h).
#include "f32_matrix.h"
#include "int_matrix.h"

namespace mcu::kernels {

Error aten_mm_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_mm_out & kIntTypes;
  TensorRef a = ctx.tensor(0);
  TensorRef b = ctx.tensor(1);
  TensorRef out = ctx.tensor(2);
  if (a.dim != 2 || b.dim != 2 || out.dim != 2) return Error::KernelFailed;
  const int32_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k || out.size(0) != m || out.size(1) != n) return Error::KernelFailed;
  if constexpr (kSet != 0) {  // integer matrices only in a program that has them
    if (a.dtype != DType::Float) return batch_matmul_int<kSet>(a, b, out, 1, m, k, n) ? Error::Ok : Error::KernelFailed;
  }
  if (!is_f32_contiguous(a) || !is_f32_contiguous(b) || !is_f32_contiguous(out)) return Error::KernelFailed;
  matmul_f32(a.f32(), b.f32(), out.f32(), m, k, n);
  return Error::Ok;
}

}  // namespace mcu::kernels
