// mcu-gen-kernel: op=cortex_m::quantized_add.out fn=cortex_m_quantized_add_out sig=TIIITIIIIIIIIOO dtypes=int8 inplace=0,4 inplace_rule=binary_same
//
// cortex_m::quantized_add.out(Tensor self, int self_zero_point, int self_multiplier,
//     int self_shift, Tensor other, int other_zero_point, int other_multiplier,
//     int other_shift, int output_zero_point, int output_multiplier, int output_shift,
//     int activation_min, int activation_max, *, Tensor(a!) out)
// As CMSIS-NN arm_elementwise_add_s8 and the reference:
//   a = requantize((x - x_zp) << 20, x_mult, x_shift)   (same for y)
//   out = clamp(requantize(a + b, out_mult, out_shift) + out_zp, act_min, act_max)
// Shapes broadcast (numpy rules, any dim_order; ExecuTorch only emits equal
// shapes or a [1, C, 1, 1] operand).
// In place (out over self or other, rule binary_same in mcu_gen/inplace.py): equal
// shapes and dim_orders take the fast path, which reads index i before writing it.
#include "int8_common.h"

namespace mcu {
namespace kernels {

namespace {
bool valid_zero_point(int64_t zp) { return zp >= -256 && zp <= 256; }
}  // namespace

Error cortex_m_quantized_add_out(const KernelContext& ctx) {
  const int64_t a_zp = ctx.int_arg(1), a_m = ctx.int_arg(2), a_s = ctx.int_arg(3);
  const int64_t b_zp = ctx.int_arg(5), b_m = ctx.int_arg(6), b_s = ctx.int_arg(7);
  const int64_t o_zp = ctx.int_arg(8), o_m = ctx.int_arg(9), o_s = ctx.int_arg(10);
  const int64_t lo = ctx.int_arg(11), hi = ctx.int_arg(12);
  if (!valid_zero_point(a_zp) || !valid_zero_point(b_zp) || !valid_zero_point(o_zp)) return Error::KernelFailed;
  if (!valid_multiplier(a_m) || !valid_multiplier(b_m) || !valid_multiplier(o_m)) return Error::KernelFailed;
  if (!valid_shift(a_s) || !valid_shift(b_s) || !valid_shift(o_s) || !valid_int8_range(lo, hi)) {
    return Error::KernelFailed;
  }
  constexpr int32_t kLeftShift = 20;  // SHIFT_INT8
  const int32_t azp = static_cast<int32_t>(a_zp), am = static_cast<int32_t>(a_m), as = static_cast<int32_t>(a_s);
  const int32_t bzp = static_cast<int32_t>(b_zp), bm = static_cast<int32_t>(b_m), bs = static_cast<int32_t>(b_s);
  const int32_t ozp = static_cast<int32_t>(o_zp), om = static_cast<int32_t>(o_m), os = static_cast<int32_t>(o_s);
  const int32_t l = static_cast<int32_t>(lo), h = static_cast<int32_t>(hi);
  return broadcast_binary_int8(ctx.tensor(0), ctx.tensor(4), ctx.tensor(13), [=](int8_t x, int8_t y) {
    const int32_t a = requantize((x - azp) * (1 << kLeftShift), am, as);
    const int32_t b = requantize((y - bzp) * (1 << kLeftShift), bm, bs);
    return static_cast<int8_t>(clamp_i32(wrap_add(requantize(wrap_add(a, b), om, os), ozp), l, h));
  });
}

}  // namespace kernels
}  // namespace mcu
