// mcu-gen-kernel: op=aten::bitwise_not.out fn=aten_bitwise_not_out sig=TOO dtypes=uint8,int8,int16,int32,int64,bool
// aten::bitwise_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = ~self (logical not for bool); integral and bool dtypes.
#include "compare_common.h"

namespace mcu {
namespace kernels {

Error aten_bitwise_not_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_bitwise_not_out & (kIntTypes | dtype_bit(DType::Bool));
  const TensorRef in = ctx.tensor(0);
  if (!bitwise_dtype(in.dtype) || in.dtype != ctx.tensor(1).dtype) return Error::KernelFailed;
  return map_elementwise<kSet>(ctx.tensor(1), in.dtype, [](auto x) {
    using C = decltype(x);
    if constexpr (__is_same(C, bool)) return !x;
    else return static_cast<C>(~x);
  }, in);
}

}  // namespace kernels
}  // namespace mcu
