// mcu-gen-kernel: op=cortex_m::quantized_add.out fn=cmsis_nn_quantized_add_out sig=TIIITIIIIIIIIOO dtypes=int8
//
// cortex_m::quantized_add.out(Tensor self, int self_zero_point, int self_multiplier,
//     int self_shift, Tensor other, int other_zero_point, int other_multiplier,
//     int other_shift, int output_zero_point, int output_multiplier, int output_shift,
//     int activation_min, int activation_max, *, Tensor(a!) out)
// On CMSIS-NN's arm_elementwise_add_s8 when both operands and the output have
// the same shape and memory layout; broadcasting and out-of-range parameters
// run the portable kernel (same arithmetic, kernels_portable/op_cortex_m_quantized_add.cpp).
#include "cmsis_nn_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_add_out(const KernelContext& ctx);  // the portable kernel

namespace {
bool zp_ok(int64_t zp) { return zp >= -128 && zp <= 127; }
bool params_ok(int64_t zp, int64_t m, int64_t s) { return zp_ok(zp) && valid_multiplier(m) && cmsis_shift_ok(s); }
}  // namespace

Error cmsis_nn_quantized_add_out(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(4), out = ctx.tensor(13);
  const int64_t lo = ctx.int_arg(11), hi = ctx.int_arg(12);
  const bool simple = is_int8(a) && is_int8(b) && is_int8(out) && same_layout(a, b) && same_layout(a, out) &&
                      params_ok(ctx.int_arg(1), ctx.int_arg(2), ctx.int_arg(3)) &&
                      params_ok(ctx.int_arg(5), ctx.int_arg(6), ctx.int_arg(7)) &&
                      params_ok(ctx.int_arg(8), ctx.int_arg(9), ctx.int_arg(10)) && valid_int8_range(lo, hi);
  if (!simple) return cortex_m_quantized_add_out(ctx);
  constexpr int32_t kLeftShift = 20;  // as TFLite and the portable kernel
  return from_status(arm_elementwise_add_s8(
      a.i8(), b.i8(), -static_cast<int32_t>(ctx.int_arg(1)), static_cast<int32_t>(ctx.int_arg(2)),
      static_cast<int32_t>(ctx.int_arg(3)), -static_cast<int32_t>(ctx.int_arg(5)), static_cast<int32_t>(ctx.int_arg(6)),
      static_cast<int32_t>(ctx.int_arg(7)), kLeftShift, out.i8(), static_cast<int32_t>(ctx.int_arg(8)),
      static_cast<int32_t>(ctx.int_arg(9)), static_cast<int32_t>(ctx.int_arg(10)), static_cast<int32_t>(lo),
      static_cast<int32_t>(hi), a.numel));
}

}  // namespace kernels
}  // namespace mcu
