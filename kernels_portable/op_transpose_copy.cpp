// mcu-gen-kernel: op=aten::transpose_copy.int_out fn=aten_transpose_copy_int_out sig=TIIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out) -> Tensor(a!)
// out = self with dims dim0 and dim1 swapped (negative dims count from the end; a
// 0-dim self takes dims 0 and -1, as ATen).
#include "permute_common.h"

namespace mcu {
namespace kernels {

Error aten_transpose_copy_int_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  int32_t a = 0;
  int32_t b = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &a) || !wrap_dim(ctx.int_arg(2), in.dim, &b)) return Error::KernelFailed;
  if (in.dim == 0) return out.dim == 0 ? copy_same_elements(in, out) : Error::KernelFailed;
  if (in.dim > kMaxDims) return Error::KernelFailed;
  int32_t perm[kMaxDims];
  swap_permutation(in.dim, a, b, perm);
  return permuted_copy(in, out, perm);
}

}  // namespace kernels
}  // namespace mcu
