// mcu-gen-kernel: op=aten::unbind_copy.int_out fn=aten_unbind_copy_int_out sig=TIY dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()
// out[k] = self.select(dim, k) for every k of self's dim (one out tensor per index).
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_unbind_copy_int_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const int32_t count = ctx.list_size(2);
  int32_t dim = 0;
  if (in.dim == 0 || !wrap_dim(ctx.int_arg(1), in.dim, &dim) || count != in.sizes[dim]) return Error::KernelFailed;
  for (int32_t k = 0; k < count; ++k) {
    const Error e = copy_chunk(in, dim, k, 1, ctx.list_tensor(2, k), true);
    if (e != Error::Ok) return e;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
