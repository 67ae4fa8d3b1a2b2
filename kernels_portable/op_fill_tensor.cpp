// mcu-gen-kernel: op=aten::fill.Tensor_out fn=aten_fill_tensor_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out) -> Tensor(a!)
// out (self's shape) = value (a 0-dim tensor) everywhere.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_fill_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_fill_tensor_out & kAllTypes;
  const TensorRef value = ctx.tensor(1);
  const TensorRef out = ctx.tensor(2);
  if (value.dim != 0 || !ctx.tensor(0).same_shape(out)) return Error::KernelFailed;
  return map_elementwise<kSet>(out, out.dtype, [](auto v) { return v; }, value);
}

}  // namespace kernels
}  // namespace mcu
