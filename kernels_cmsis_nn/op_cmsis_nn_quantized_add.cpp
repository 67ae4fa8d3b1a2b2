// mcu-gen-kernel: op=cortex_m::quantized_add.out fn=cmsis_nn_quantized_add_out prepare=cmsis_nn_quantized_add_prepare sig=TIIITIIIIIIIIOO dtypes=int8
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

bool add_cmsis_case(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(4), out = ctx.tensor(13);
  return is_int8(a) && is_int8(b) && is_int8(out) && same_layout(a, b) && same_layout(a, out) &&
         params_ok(ctx.int_arg(1), ctx.int_arg(2), ctx.int_arg(3)) &&
         params_ok(ctx.int_arg(5), ctx.int_arg(6), ctx.int_arg(7)) &&
         params_ok(ctx.int_arg(8), ctx.int_arg(9), ctx.int_arg(10)) && valid_int8_range(ctx.int_arg(11), ctx.int_arg(12));
}

// arm_elementwise_add_s8 with the integer arguments 1..12 in p[1..12] (checked in range).
Error call_add(const void* x, const void* y, void* out, int32_t n, const int32_t* p) {
  constexpr int32_t kLeftShift = 20;  // as TFLite and the portable kernel
  return from_status(arm_elementwise_add_s8(static_cast<const int8_t*>(x), static_cast<const int8_t*>(y), -p[1], p[2],
                                            p[3], -p[5], p[6], p[7], kLeftShift, static_cast<int8_t*>(out), p[8], p[9],
                                            p[10], p[11], p[12], n));
}

// Prepared at load (kernel.h PrepareFn): no checks, decoded arguments.
Error run_prepared_add(const KernelContext& ctx) {
  int32_t p[13];
  for (int32_t i = 1; i < 13; ++i) p[i] = static_cast<int32_t>(ctx.decoded_int(i));
  const DecodedValue& a = ctx.decoded(0);
  return call_add(a.data, ctx.decoded(4).data, ctx.decoded(13).data, a.numel, p);
}

}  // namespace

Error cmsis_nn_quantized_add_out(const KernelContext& ctx) {
  if (!add_cmsis_case(ctx)) return cortex_m_quantized_add_out(ctx);
  int32_t p[13];
  for (int32_t i = 1; i < 13; ++i) p[i] = static_cast<int32_t>(ctx.int_arg(i));
  const TensorRef a = ctx.tensor(0);
  return call_add(a.data, ctx.tensor(4).data, ctx.tensor(13).data, a.numel, p);
}

// Prepared at load (kernel.h PrepareFn): the checks once, then run_prepared_add.
KernelFn cmsis_nn_quantized_add_prepare(const KernelContext& ctx) {
  if (!ctx.all_decoded() || !add_cmsis_case(ctx)) return &cmsis_nn_quantized_add_out;
  return &run_prepared_add;
}

}  // namespace kernels
}  // namespace mcu
