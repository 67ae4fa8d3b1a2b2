// mcu-gen-kernel: op=aten::bitwise_right_shift.Tensor_Scalar_out fn=aten_bitwise_right_shift_tensor_scalar_out sig=TSOO dtypes=uint8,int8,int16,int32,int64
// aten::bitwise_right_shift.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = self >> other in the promoted integer dtype (ATen's rules beyond the width).
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_bitwise_right_shift_tensor_scalar_out(const KernelContext& ctx) {
  return bitwise_scalar<selected::aten_bitwise_right_shift_tensor_scalar_out & kIntTypes>(ctx, [](auto x, auto y) {
    if constexpr (__is_same(decltype(x), bool)) return x;
    else return shift_right(x, y);
  });
}

}  // namespace kernels
}  // namespace mcu
