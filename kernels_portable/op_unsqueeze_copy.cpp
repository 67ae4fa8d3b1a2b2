// mcu-gen-kernel: op=aten::unsqueeze_copy.out fn=aten_unsqueeze_copy_out sig=TIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out)
// out = self with a size-1 dim inserted at `dim` (in [-(n+1), n]). A plain
// copy; out may be the same memory as self.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_unsqueeze_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  int32_t dim = 0;
  if (out.dim != in.dim + 1 || !wrap_dim(ctx.int_arg(1), out.dim, &dim)) return Error::KernelFailed;
  for (int32_t d = 0, i = 0; d < out.dim; ++d) {
    const int32_t expected = d == dim ? 1 : in.sizes[i++];
    if (out.sizes[d] != expected) return Error::KernelFailed;
  }
  return copy_same_elements(in, out);
}

}  // namespace kernels
}  // namespace mcu
