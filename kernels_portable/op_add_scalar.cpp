// mcu-gen-kernel: op=aten::add.Scalar_out fn=aten_add_scalar_out sig=TSSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
// out = self + alpha * other.
#include "elementwise_common.h"
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_add_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_add_scalar_out & kAllTypes;
  // A float-only program compiles the float loop alone (as before the other dtypes).
  if (kSet == kFloatTypes || (is_float(ctx.tensor(0)) && is_float(ctx.tensor(3)))) {
    const float other = static_cast<float>(ctx.scalar_arg(1));
    const float alpha = static_cast<float>(ctx.scalar_arg(2));
    const float b = alpha * other;
    return unary_float(ctx.tensor(0), ctx.tensor(3), [b](float a) { return a + b; });
  }
  if constexpr (kSet != kFloatTypes) {
    const TensorRef a = ctx.tensor(0);
    const Scalar s = ctx.scalar(1);
    const Scalar alpha = ctx.scalar(2);
    return map_elementwise<kSet>(ctx.tensor(3), result_type(a, s), [s, alpha](auto x) {
      using C = decltype(x);
      const C y = scalar_as<C>(s);
      return wrapping_add(x, wrapping_mul(scalar_as<C>(alpha), y));
    }, a);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
