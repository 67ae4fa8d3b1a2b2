// mcu-gen-kernel: op=aten::permute_copy.out fn=aten_permute_copy_out sig=TLOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out)
// out dim i is self dim dims[i] (negative dims count from the end).
#include "permute_common.h"

namespace mcu {
namespace kernels {

Error aten_permute_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList dims = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (dims.size() != in.dim || in.dim > kMaxDims) return Error::KernelFailed;
  int32_t perm[kMaxDims];
  for (int32_t i = 0; i < in.dim; ++i) {
    if (!wrap_dim(dims[i], in.dim, &perm[i])) return Error::KernelFailed;
  }
  return permuted_copy(in, out, perm);
}

}  // namespace kernels
}  // namespace mcu
