// mcu-gen-kernel: op=aten::any.all_out fn=aten_any_all_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::any.all_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
#include "any_common.h"

namespace mcu {
namespace kernels {

Error aten_any_all_out(const KernelContext& ctx) {
  return reduce_any<selected::aten_any_all_out>(ctx.tensor(0), ReducedDims{}, false, ctx.tensor(1));
}

}  // namespace kernels
}  // namespace mcu
