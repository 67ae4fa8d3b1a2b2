// mcu-gen-kernel: op=cortex_m::quantized_mul.out fn=cortex_m_quantized_mul_out sig=TITIIIIOO dtypes=int8
//
// cortex_m::quantized_mul.out(Tensor self, int self_zero_point, Tensor other,
//     int other_zero_point, int output_zero_point, int output_multiplier,
//     int output_shift, *, Tensor(a!) out)
// As CMSIS-NN arm_elementwise_mul_s8 and the reference:
//   out = clamp(requantize((x - x_zp) * (y - y_zp), m, s) + out_zp, -128, 127)
// Shapes broadcast (numpy rules, any dim_order).
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_mul_out(const KernelContext& ctx) {
  const int64_t a_zp = ctx.int_arg(1), b_zp = ctx.int_arg(3);
  const int64_t o_zp = ctx.int_arg(4), o_m = ctx.int_arg(5), o_s = ctx.int_arg(6);
  if (a_zp < -256 || a_zp > 256 || b_zp < -256 || b_zp > 256 || o_zp < -256 || o_zp > 256) return Error::KernelFailed;
  if (!valid_multiplier(o_m) || !valid_shift(o_s)) return Error::KernelFailed;
  const int32_t azp = static_cast<int32_t>(a_zp), bzp = static_cast<int32_t>(b_zp);
  const int32_t ozp = static_cast<int32_t>(o_zp), om = static_cast<int32_t>(o_m), os = static_cast<int32_t>(o_s);
  return broadcast_binary_int8(ctx.tensor(0), ctx.tensor(2), ctx.tensor(7), [=](int8_t x, int8_t y) {
    return static_cast<int8_t>(clamp_i32(wrap_add(requantize((x - azp) * (y - bzp), om, os), ozp), -128, 127));
  });
}

}  // namespace kernels
}  // namespace mcu
