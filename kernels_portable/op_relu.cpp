// mcu-gen-kernel: op=aten::relu.out fn=aten_relu_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::relu.out(Tensor self, *, Tensor(a!) out)
// out = max(self, 0); NaN stays NaN. Integer tensors stay integer (self's dtype).
#include "elementwise_common.h"
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_relu_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_relu_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(1);
  // A float-only program compiles the float loop alone.
  if (kSet == kFloatTypes || (is_float(in) && is_float(out))) {
    return unary_float(in, out, [](float x) { return x < 0.0f ? 0.0f : x; });
  }
  if constexpr (kSet != kFloatTypes) {
    if (in.dtype != out.dtype) return Error::KernelFailed;
    return map_elementwise<kSet>(out, in.dtype, [](auto x) {
      using C = decltype(x);
      return x < C(0) ? C(0) : x;
    }, in);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
