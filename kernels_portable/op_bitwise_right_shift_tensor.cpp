// mcu-gen-kernel: op=aten::bitwise_right_shift.Tensor_out fn=aten_bitwise_right_shift_tensor_out sig=TTOO dtypes=uint8,int8,int16,int32,int64
// aten::bitwise_right_shift.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = self >> other in the promoted integer dtype (ATen's rules beyond the width).
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_bitwise_right_shift_tensor_out(const KernelContext& ctx) {
  return bitwise_tensors<selected::aten_bitwise_right_shift_tensor_out & kIntTypes>(ctx, [](auto x, auto y) {
    if constexpr (__is_same(decltype(x), bool)) return x;
    else return shift_right(x, y);
  });
}

}  // namespace kernels
}  // namespace mcu
