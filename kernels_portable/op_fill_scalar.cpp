// mcu-gen-kernel: op=aten::fill.Scalar_out fn=aten_fill_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out) -> Tensor(a!)
// out (self's shape) = value everywhere.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_fill_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_fill_scalar_out & kAllTypes;
  if (!ctx.tensor(0).same_shape(ctx.tensor(2))) return Error::KernelFailed;
  return fill_with<kSet>(ctx.tensor(2), ctx.scalar(1));
}

}  // namespace kernels
}  // namespace mcu
