// mcu-gen-kernel: op=aten::div.Scalar_mode_out fn=aten_div_scalar_mode_out sig=TSzOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)
// rounding_mode None: true division in float32; "trunc": toward zero; "floor":
// toward negative infinity (ATen's div_floor), in the promoted dtype. Integer
// division by zero fails (ATen raises).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_div_scalar_mode_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_div_scalar_mode_out & kRealTypes) | kFloatTypes;
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  const TensorRef out = ctx.tensor(3);
  int mode = 0;  // 0 true, 1 trunc, 2 floor
  if (!ctx.is_none(2)) {
    int32_t n = 0;
    const char* m = ctx.string_arg(2, &n);
    if (n == 5 && memcmp(m, "trunc", 5) == 0) mode = 1;
    else if (n == 5 && memcmp(m, "floor", 5) == 0) mode = 2;
    else return Error::KernelFailed;
  }
  if (mode == 0) {
    return map_elementwise<kSet>(out, DType::Float, [s](auto x) {
    const auto y = scalar_as<decltype(x)>(s);
      return x / y;
    }, a);
  }
  Status st;
  const Error e = map_elementwise<kSet>(out, result_type(a, s), [&st, mode, s](auto x) {
    const auto y = scalar_as<decltype(x)>(s);
    return mode == 1 ? trunc_div(x, y, st) : floor_div(x, y, st);
  }, a);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
