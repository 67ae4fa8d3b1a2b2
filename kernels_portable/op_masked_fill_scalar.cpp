// mcu-gen-kernel: op=aten::masked_fill.Scalar_out fn=aten_masked_fill_scalar_out sig=TTSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::masked_fill.Scalar_out(Tensor self, Tensor mask, Scalar value, *, Tensor(a!) out) -> Tensor(a!)
// out = mask ? value : self, mask (bool) broadcast to self; value converted to self's dtype.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_masked_fill_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_masked_fill_scalar_out | dtype_bit(DType::Bool)) & kAllTypes;
  const TensorRef self = ctx.tensor(0);
  const TensorRef mask = ctx.tensor(1);
  const Scalar value = ctx.scalar(2);
  const TensorRef out = ctx.tensor(3);
  if (mask.dtype != DType::Bool || out.dtype != self.dtype || !out.same_shape(self)) return Error::KernelFailed;
  // The mask converts to the compute type as 0 or 1.
  return map_elementwise<kSet>(out, self.dtype, [value](auto x, auto m) {
    using C = decltype(x);
    return m != C(0) ? scalar_as<C>(value) : x;
  }, self, mask);
}

}  // namespace kernels
}  // namespace mcu
