// mcu-gen-kernel: op=aten::t_copy.out fn=aten_t_copy_out sig=TOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::t_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = self transposed: a matrix's two dims swapped; 0-dim and 1-dim self are copied
// (ATen: self has at most 2 dims).
#include "permute_common.h"

namespace mcu {
namespace kernels {

Error aten_t_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dim > 2 || out.dim != in.dim) return Error::KernelFailed;
  if (in.dim < 2) return in.same_shape(out) ? copy_same_elements(in, out) : Error::KernelFailed;
  const int32_t perm[2] = {1, 0};
  return permuted_copy(in, out, perm);
}

}  // namespace kernels
}  // namespace mcu
