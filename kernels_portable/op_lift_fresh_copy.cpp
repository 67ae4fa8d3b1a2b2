// mcu-gen-kernel: op=aten::lift_fresh_copy.out fn=aten_lift_fresh_copy_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::lift_fresh_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = a copy of self (a constant made a fresh tensor), in out's layout.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_lift_fresh_copy_out(const KernelContext& ctx) { return copy_to_layout(ctx.tensor(0), ctx.tensor(1)); }

}  // namespace kernels
}  // namespace mcu
