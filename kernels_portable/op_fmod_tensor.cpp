// mcu-gen-kernel: op=aten::fmod.Tensor_out fn=aten_fmod_tensor_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = C's fmod(self, other) (sign of self); integer % 0 fails.
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_fmod_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_fmod_tensor_out & kRealTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  DType compute = result_type(a, b);
  Status st;
  const Error e = map_elementwise<kSet>(ctx.tensor(2), compute, [&st](auto x, auto y) {
    return fmod_of(x, y, st);
  }, a, b);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
