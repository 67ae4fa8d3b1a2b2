// mcu-gen-kernel: op=aten::logical_and.out fn=aten_logical_and_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = bool(self) && bool(other), broadcast; any input dtypes.
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_logical_and_out(const KernelContext& ctx) {
  return logical_tensors<selected::aten_logical_and_out>(ctx, [](bool x, bool y) { return x && y; });
}

}  // namespace kernels
}  // namespace mcu
