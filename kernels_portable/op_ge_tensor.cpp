// mcu-gen-kernel: op=aten::ge.Tensor_out fn=aten_ge_tensor_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = (self >= other) with broadcasting, compared in the promoted dtype.
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_ge_tensor_out(const KernelContext& ctx) {
  return compare_tensors<selected::aten_ge_tensor_out>(ctx, [](auto a, auto b) { return a >= b; });
}

}  // namespace kernels
}  // namespace mcu
