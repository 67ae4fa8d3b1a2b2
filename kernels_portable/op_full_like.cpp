// mcu-gen-kernel: op=aten::full_like.out fn=aten_full_like_out sig=TS?OO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
// out (self's shape, out's dtype) = fill_value everywhere; memory_format is out's dim order.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_full_like_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_full_like_out & kAllTypes;
  if (!ctx.tensor(0).same_shape(ctx.tensor(3))) return Error::KernelFailed;
  return fill_with<kSet>(ctx.tensor(3), ctx.scalar(1));
}

}  // namespace kernels
}  // namespace mcu
