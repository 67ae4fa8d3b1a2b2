// mcu-gen-kernel: op=aten::squeeze_copy.dim_out fn=aten_squeeze_copy_dim_out sig=TIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
// out = self without dim if it has size 1 (else the same shape). A plain copy; out may be
// the same memory as self.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_squeeze_copy_dim_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  int32_t drop = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &drop)) return Error::KernelFailed;
  if (in.dim == 0 || in.sizes[drop] != 1) drop = -1;
  int32_t o = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (d == drop) continue;
    if (o >= out.dim || out.sizes[o] != in.sizes[d]) return Error::KernelFailed;
    ++o;
  }
  if (o != out.dim) return Error::KernelFailed;
  return copy_same_elements(in, out);
}

}  // namespace kernels
}  // namespace mcu
