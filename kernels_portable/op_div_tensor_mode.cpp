// mcu-gen-kernel: op=aten::div.out_mode fn=aten_div_out_mode sig=TTzOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)
// rounding_mode None: true division in float32; "trunc": toward zero; "floor":
// toward negative infinity (ATen's div_floor), in the promoted dtype. Integer
// division by zero fails (ATen raises).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_div_out_mode(const KernelContext& ctx) {
  constexpr DTypeSet kSet = (selected::aten_div_out_mode & kRealTypes) | kFloatTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
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
    return map_elementwise<kSet>(out, DType::Float, [](auto x, auto y) {
      return x / y;
    }, a, b);
  }
  Status st;
  const Error e = map_elementwise<kSet>(out, result_type(a, b), [&st, mode](auto x, auto y) {
    return mode == 1 ? trunc_div(x, y, st) : floor_div(x, y, st);
  }, a, b);
  return st.result(e);
}

}  // namespace kernels
}  // namespace mcu
