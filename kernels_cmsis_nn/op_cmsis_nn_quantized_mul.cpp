// mcu-gen-kernel: op=cortex_m::quantized_mul.out fn=cmsis_nn_quantized_mul_out sig=TITIIIIOO dtypes=int8
//
// cortex_m::quantized_mul.out(Tensor self, int self_zero_point, Tensor other,
//     int other_zero_point, int output_zero_point, int output_multiplier,
//     int output_shift, *, Tensor(a!) out)
// On CMSIS-NN's arm_elementwise_mul_s8 when both operands and the output have
// the same shape and memory layout; otherwise the portable kernel (same arithmetic).
#include "cmsis_nn_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_mul_out(const KernelContext& ctx);  // the portable kernel

namespace {
bool zp_ok(int64_t zp) { return zp >= -128 && zp <= 127; }
}  // namespace

Error cmsis_nn_quantized_mul_out(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(2), out = ctx.tensor(7);
  const bool simple = is_int8(a) && is_int8(b) && is_int8(out) && same_layout(a, b) && same_layout(a, out) &&
                      zp_ok(ctx.int_arg(1)) && zp_ok(ctx.int_arg(3)) && zp_ok(ctx.int_arg(4)) &&
                      valid_multiplier(ctx.int_arg(5)) && cmsis_shift_ok(ctx.int_arg(6));
  if (!simple) return cortex_m_quantized_mul_out(ctx);
  return from_status(arm_elementwise_mul_s8(a.i8(), b.i8(), -static_cast<int32_t>(ctx.int_arg(1)),
                                            -static_cast<int32_t>(ctx.int_arg(3)), out.i8(),
                                            static_cast<int32_t>(ctx.int_arg(4)), static_cast<int32_t>(ctx.int_arg(5)),
                                            static_cast<int32_t>(ctx.int_arg(6)), -128, 127, a.numel));
}

}  // namespace kernels
}  // namespace mcu
