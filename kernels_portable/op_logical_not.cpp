// mcu-gen-kernel: op=aten::logical_not.out fn=aten_logical_not_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::logical_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = !bool(self) (zero is false; NaN is true).
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_logical_not_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_logical_not_out | dtype_bit(DType::Bool)) & kAllTypes;
  return map_elementwise<kSet>(ctx.tensor(1), DType::Bool, [](bool x) { return !x; }, ctx.tensor(0));
}

}  // namespace kernels
}  // namespace mcu
