// mcu-gen-kernel: op=cortex_m::quantize_per_tensor.out fn=cortex_m_quantize_per_tensor_out sig=TDIIIIOO dtypes=int8 inplace=0 inplace_rule=narrowing
//
// cortex_m::quantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// fp32 -> int8, as quantized_decomposed.quantize_per_tensor:
//   out = clamp(round_half_even(x * (float)(1.0 / scale)) + zero_point, quant_min, quant_max)
// in float32 (the inverse scale is computed in double, then rounded to float).
// NaN becomes quant_min. Input and output share shape and dim_order.
// In place (the int8 out over the float input, mcu_gen/plan/inplace.py `narrowing`): element i is read
// before byte i is written, in order, and byte i lies in an element already read (i / 4 <= i).
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantize_per_tensor_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const double scale = ctx.double_arg(1);
  const int64_t zero_point = ctx.int_arg(2);
  const int64_t qmin = ctx.int_arg(3);
  const int64_t qmax = ctx.int_arg(4);
  const int64_t dtype = ctx.int_arg(5);
  const TensorRef out = ctx.tensor(6);
  if (in.dtype != DType::Float || !is_int8(out) || dtype != static_cast<int64_t>(DType::Int8)) {
    return Error::KernelFailed;
  }
  if (!in.same_shape(out) || !valid_int8_range(qmin, qmax) || zero_point < -128 || zero_point > 127) {
    return Error::KernelFailed;
  }
  if (!(scale > 0.0) || in.dim != out.dim) return Error::KernelFailed;
  for (int32_t p = 0; p < in.dim; ++p) {
    if ((in.dim_order ? in.dim_order[p] : p) != (out.dim_order ? out.dim_order[p] : p)) return Error::KernelFailed;
  }
  const float inv_scale = static_cast<float>(1.0 / scale);
  const float zp = static_cast<float>(zero_point);
  const float* x = in.f32();
  int8_t* y = out.i8();
  for (int32_t i = 0; i < in.numel; ++i) {
    const float q = round_half_even(x[i] * inv_scale) + zp;
    y[i] = static_cast<int8_t>(float_to_int_clamped(q, static_cast<int32_t>(qmin), static_cast<int32_t>(qmax)));
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
