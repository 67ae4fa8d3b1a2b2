// mcu-gen-kernel: op=aten::bitwise_xor.Tensor_out fn=aten_bitwise_xor_tensor_out sig=TTOO dtypes=uint8,int8,int16,int32,int64,bool
// aten::bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = self ^ other, broadcast, in the promoted integral (or bool) dtype.
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_bitwise_xor_tensor_out(const KernelContext& ctx) {
  return bitwise_tensors<selected::aten_bitwise_xor_tensor_out>(ctx, [](auto x, auto y) { return x ^ y; });
}

}  // namespace kernels
}  // namespace mcu
