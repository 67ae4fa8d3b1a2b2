// mcu-gen-kernel: op=aten::div.Scalar_out fn=aten_div_scalar_out sig=TSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// out = self / other.
#include "elementwise_common.h"
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_div_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_div_scalar_out & kAllTypes;
  // A float-only program compiles the float loop alone (as before the other dtypes).
  if (kSet == kFloatTypes || (is_float(ctx.tensor(0)) && is_float(ctx.tensor(2)))) {
    const float b = static_cast<float>(ctx.scalar_arg(1));
    return unary_float(ctx.tensor(0), ctx.tensor(2), [b](float a) { return a / b; });
  }
  if constexpr (kSet != kFloatTypes) {
    const TensorRef a = ctx.tensor(0);
    const Scalar s = ctx.scalar(1);
    return map_elementwise<kSet>(ctx.tensor(2), DType::Float, [s](auto x) {
      using C = decltype(x);
      const C y = scalar_as<C>(s);
      return x / y;
    }, a);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
