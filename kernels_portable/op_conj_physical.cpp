// mcu-gen-kernel: op=aten::_conj_physical.out fn=aten__conj_physical_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::_conj_physical.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// The complex conjugate; of a real tensor (the only kind mcu-gen has) a copy of self.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten__conj_physical_out(const KernelContext& ctx) { return copy_to_layout(ctx.tensor(0), ctx.tensor(1)); }

}  // namespace kernels
}  // namespace mcu
