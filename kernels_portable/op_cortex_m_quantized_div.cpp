// mcu-gen-kernel: op=cortex_m::quantized_div.out fn=cortex_m_quantized_div_out sig=TITIIDOO dtypes=int8
//
// cortex_m::quantized_div.out(Tensor self, int self_zero_point, Tensor other,
//     int other_zero_point, int output_zero_point, float output_scale, *, Tensor(a!) out)
// As the reference, in float32 (output_scale = s_x / (s_y * s_out), rounded to float):
//   q = y != y_zp ? float(x - x_zp) / float(y - y_zp) : 0
//   out = clamp(round_half_even(q * output_scale) + out_zp, -128, 127)
// Equal shapes only (no broadcasting), any common dim_order.
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_div_out(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(2);
  const TensorRef out = ctx.tensor(6);
  const int64_t a_zp = ctx.int_arg(1), b_zp = ctx.int_arg(3), o_zp = ctx.int_arg(4);
  if (!a.same_shape(b) || !a.same_shape(out)) return Error::KernelFailed;
  if (a_zp < -256 || a_zp > 256 || b_zp < -256 || b_zp > 256 || o_zp < -256 || o_zp > 256) return Error::KernelFailed;
  const float scale = static_cast<float>(ctx.double_arg(5));
  const int32_t azp = static_cast<int32_t>(a_zp), bzp = static_cast<int32_t>(b_zp);
  const float ozp = static_cast<float>(o_zp);
  return broadcast_binary_int8(a, b, out, [=](int8_t x, int8_t y) {
    const float num = static_cast<float>(x - azp);
    const float den = static_cast<float>(y - bzp);
    const float q = den != 0.0f ? num / den : 0.0f;
    return static_cast<int8_t>(float_to_int_clamped(round_half_even(q * scale) + ozp, -128, 127));
  });
}

}  // namespace kernels
}  // namespace mcu
