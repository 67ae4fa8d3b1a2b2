// mcu-gen-kernel: op=aten::scalar_tensor.out fn=aten_scalar_tensor_out sig=SOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out) -> Tensor(a!)
// out (0-dim) = s in out's dtype.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_scalar_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_scalar_tensor_out & kAllTypes;
  const TensorRef out = ctx.tensor(1);
  if (out.numel != 1) return Error::KernelFailed;
  return fill_with<kSet>(out, ctx.scalar(0));
}

}  // namespace kernels
}  // namespace mcu
