// mcu-gen-kernel: op=aten::hardtanh.out fn=aten_hardtanh_out sig=TSSOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
// out = min(max(self, min_val), max_val); NaN stays NaN. Integer tensors stay integer
// (the bounds converted to self's dtype, as ATen).
#include "elementwise_common.h"
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_hardtanh_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_hardtanh_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  // A float-only program compiles the float loop alone.
  if (kSet == kFloatTypes || (is_float(in) && is_float(out))) {
    const float lo = static_cast<float>(ctx.scalar_arg(1));
    const float hi = static_cast<float>(ctx.scalar_arg(2));
    return unary_float(in, out, [lo, hi](float x) {
      const float y = x < lo ? lo : x;
      return y > hi ? hi : y;
    });
  }
  if constexpr (kSet != kFloatTypes) {
    if (in.dtype != out.dtype) return Error::KernelFailed;
    const Scalar lo = ctx.scalar(1);
    const Scalar hi = ctx.scalar(2);
    return map_elementwise<kSet>(out, in.dtype, [lo, hi](auto x) {
      using C = decltype(x);
      const C y = x < scalar_as<C>(lo) ? scalar_as<C>(lo) : x;
      return y > scalar_as<C>(hi) ? scalar_as<C>(hi) : y;
    }, in);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
