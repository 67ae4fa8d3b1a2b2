// mcu-gen-kernel: op=cortex_m::dequantize_per_tensor.out fn=cortex_m_dequantize_per_tensor_out sig=TDIIIIOO dtypes=int8 inplace=0 inplace_rule=widening
//
// cortex_m::dequantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// int8 -> fp32, as quantized_decomposed.dequantize_per_tensor:
//   out = ((float)q - zero_point) * (float)scale, in float32.
// Input and output share shape and dim_order.
// In place (the float out over the int8 input, mcu_gen/plan/inplace.py `widening`): from the last
// element down, element i is read before out element i (bytes 4i..4i+3, input elements >= i) is written.
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_dequantize_per_tensor_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const double scale = ctx.double_arg(1);
  const int64_t zero_point = ctx.int_arg(2);
  const int64_t dtype = ctx.int_arg(5);
  const TensorRef out = ctx.tensor(6);
  if (!is_int8(in) || out.dtype != DType::Float || dtype != static_cast<int64_t>(DType::Int8)) {
    return Error::KernelFailed;
  }
  if (!in.same_shape(out) || in.dim != out.dim || zero_point < -128 || zero_point > 127) return Error::KernelFailed;
  for (int32_t p = 0; p < in.dim; ++p) {
    if ((in.dim_order ? in.dim_order[p] : p) != (out.dim_order ? out.dim_order[p] : p)) return Error::KernelFailed;
  }
  const float s = static_cast<float>(scale);
  const float zp = static_cast<float>(zero_point);
  const int8_t* q = in.i8();
  float* y = out.f32();
  for (int32_t i = in.numel - 1; i >= 0; --i) y[i] = (static_cast<float>(q[i]) - zp) * s;
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
