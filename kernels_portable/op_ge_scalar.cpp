// mcu-gen-kernel: op=aten::ge.Scalar_out fn=aten_ge_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = (self >= other), compared in the dtype ATen promotes the two to.
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_ge_scalar_out(const KernelContext& ctx) {
  return compare_scalar<selected::aten_ge_scalar_out>(ctx, [](auto a, auto b) { return a >= b; });
}

}  // namespace kernels
}  // namespace mcu
