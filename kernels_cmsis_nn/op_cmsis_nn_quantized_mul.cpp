// mcu-gen-kernel: op=cortex_m::quantized_mul.out fn=cmsis_nn_quantized_mul_out prepare=cmsis_nn_quantized_mul_prepare sig=TITIIIIOO dtypes=int8
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

bool mul_cmsis_case(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(2), out = ctx.tensor(7);
  return is_int8(a) && is_int8(b) && is_int8(out) && same_layout(a, b) && same_layout(a, out) &&
         zp_ok(ctx.int_arg(1)) && zp_ok(ctx.int_arg(3)) && zp_ok(ctx.int_arg(4)) && valid_multiplier(ctx.int_arg(5)) &&
         cmsis_shift_ok(ctx.int_arg(6));
}

// arm_elementwise_mul_s8 with the integer arguments in p[1], p[3..6] (checked in range).
Error call_mul(const void* x, const void* y, void* out, int32_t n, const int32_t* p) {
  return from_status(arm_elementwise_mul_s8(static_cast<const int8_t*>(x), static_cast<const int8_t*>(y), -p[1], -p[3],
                                            static_cast<int8_t*>(out), p[4], p[5], p[6], -128, 127, n));
}

// Prepared at load (kernel.h PrepareFn): no checks, decoded arguments.
Error run_prepared_mul(const KernelContext& ctx) {
  const int32_t p[7] = {0, static_cast<int32_t>(ctx.decoded_int(1)), 0, static_cast<int32_t>(ctx.decoded_int(3)),
                        static_cast<int32_t>(ctx.decoded_int(4)), static_cast<int32_t>(ctx.decoded_int(5)),
                        static_cast<int32_t>(ctx.decoded_int(6))};
  const DecodedValue& a = ctx.decoded(0);
  return call_mul(a.data, ctx.decoded(2).data, ctx.decoded(7).data, a.numel, p);
}

}  // namespace

Error cmsis_nn_quantized_mul_out(const KernelContext& ctx) {
  if (!mul_cmsis_case(ctx)) return cortex_m_quantized_mul_out(ctx);
  const int32_t p[7] = {0, static_cast<int32_t>(ctx.int_arg(1)), 0, static_cast<int32_t>(ctx.int_arg(3)),
                        static_cast<int32_t>(ctx.int_arg(4)), static_cast<int32_t>(ctx.int_arg(5)),
                        static_cast<int32_t>(ctx.int_arg(6))};
  const TensorRef a = ctx.tensor(0);
  return call_mul(a.data, ctx.tensor(2).data, ctx.tensor(7).data, a.numel, p);
}

// Prepared at load (kernel.h PrepareFn): the checks once, then run_prepared_mul.
KernelFn cmsis_nn_quantized_mul_prepare(const KernelContext& ctx) {
  if (!ctx.all_decoded() || !mul_cmsis_case(ctx)) return &cmsis_nn_quantized_mul_out;
  return &run_prepared_mul;
}

}  // namespace kernels
}  // namespace mcu
