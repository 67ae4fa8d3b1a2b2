// mcu-gen-kernel: op=aten::any.out fn=aten_any_out sig=TIBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
#include "any_common.h"

namespace mcu {
namespace kernels {

Error aten_any_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  return reduce_any<selected::aten_any_out>(in, reduced_dim(ctx, 1, in.dim), ctx.bool_arg(2), ctx.tensor(3));
}

}  // namespace kernels
}  // namespace mcu
