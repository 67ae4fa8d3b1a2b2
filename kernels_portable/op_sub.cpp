// mcu-gen-kernel: op=aten::sub.out fn=aten_sub_out sig=TTSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0,1
// aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
// out = self - alpha * other, with NumPy broadcasting.
#include "elementwise_common.h"
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_sub_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_sub_out & kAllTypes;
  // A float-only program compiles the float loop alone (as before the other dtypes).
  if (kSet == kFloatTypes || (is_float(ctx.tensor(0)) && is_float(ctx.tensor(1)) && is_float(ctx.tensor(3)))) {
    const float alpha = static_cast<float>(ctx.scalar_arg(2));
    return binary_float(ctx.tensor(0), ctx.tensor(1), ctx.tensor(3), [alpha](float a, float b) { return a - alpha * b; });
  }
  if constexpr (kSet != kFloatTypes) {
    const TensorRef a = ctx.tensor(0);
    const TensorRef b = ctx.tensor(1);
    const Scalar alpha = ctx.scalar(2);
    return map_elementwise<kSet>(ctx.tensor(3), result_type(a, b), [alpha](auto x, auto y) {
      using C = decltype(x);
      (void)sizeof(C);
      return wrapping_sub(x, wrapping_mul(scalar_as<C>(alpha), y));
    }, a, b);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
