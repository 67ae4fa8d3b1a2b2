// mcu-gen-kernel: op=aten::alias_copy.out fn=aten_alias_copy_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::alias_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = a copy of self (any dtype).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_alias_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  if (in.dtype != out.dtype || !in.same_shape(out)) return Error::KernelFailed;
  return copy_to_layout(in, out);
}

}  // namespace kernels
}  // namespace mcu
