// mcu-gen-kernel: op=aten::any.dims_out fn=aten_any_dims_out sig=TlBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::any.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
#include "any_common.h"

namespace mcu {
namespace kernels {

Error aten_any_dims_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  return reduce_any<selected::aten_any_dims_out>(in, reduced_dims(ctx, 1, in.dim), ctx.bool_arg(2), ctx.tensor(3));
}

}  // namespace kernels
}  // namespace mcu
