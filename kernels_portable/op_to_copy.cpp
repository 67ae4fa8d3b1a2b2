// mcu-gen-kernel: op=aten::_to_copy.out fn=aten__to_copy_out sig=TB?OO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
// out = self converted to out's dtype (ATen's casts: float to int rounds toward zero, saturating).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten__to_copy_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten__to_copy_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (!in.same_shape(out)) return Error::KernelFailed;
  if (in.dtype == out.dtype) return copy_to_layout(in, out);
  return map_elementwise<kSet>(out, in.dtype, [](auto x) { return x; }, in);
}

}  // namespace kernels
}  // namespace mcu
