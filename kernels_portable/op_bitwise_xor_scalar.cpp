// mcu-gen-kernel: op=aten::bitwise_xor.Scalar_out fn=aten_bitwise_xor_scalar_out sig=TSOO dtypes=uint8,int8,int16,int32,int64,bool
// aten::bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
// out = self ^ other (an Int or Bool Scalar).
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_bitwise_xor_scalar_out(const KernelContext& ctx) {
  return bitwise_scalar<selected::aten_bitwise_xor_scalar_out>(ctx, [](auto x, auto y) { return x ^ y; });
}

}  // namespace kernels
}  // namespace mcu
