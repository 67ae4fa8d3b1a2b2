// mcu-gen-kernel: op=aten::mul.out fn=aten_mul_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0,1
// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
// out = self * other, with NumPy broadcasting.
#include "elementwise_common.h"
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_mul_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_mul_out & kAllTypes;
  // A float-only program compiles the float loop alone (as before the other dtypes).
  if (kSet == kFloatTypes || (is_float(ctx.tensor(0)) && is_float(ctx.tensor(1)) && is_float(ctx.tensor(2)))) {
    return binary_float(ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), [](float a, float b) { return a * b; });
  }
  if constexpr (kSet != kFloatTypes) {
    const TensorRef a = ctx.tensor(0);
    const TensorRef b = ctx.tensor(1);
    return map_elementwise<kSet>(ctx.tensor(2), result_type(a, b), [](auto x, auto y) {
      using C = decltype(x);
      (void)sizeof(C);
      return wrapping_mul(x, y);
    }, a, b);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
