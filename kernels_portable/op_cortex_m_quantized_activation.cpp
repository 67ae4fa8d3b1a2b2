// mcu-gen-kernel: op=cortex_m::quantized_activation.out fn=cortex_m_quantized_activation_out sig=TTOO dtypes=int8
//
// cortex_m::quantized_activation.out(Tensor input, Tensor lut, *, Tensor(a!) out)
// Table lookup: out[i] = lut[input[i] + 128]; lut is 256 int8 values built
// ahead of time from the activation and both quantizations. Input and output
// share shape and dim_order (in place is fine).
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_activation_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef lut = ctx.tensor(1);
  const TensorRef out = ctx.tensor(2);
  if (!is_int8(in) || !is_int8(lut) || !is_int8(out) || lut.numel != 256 || !in.same_shape(out)) {
    return Error::KernelFailed;
  }
  for (int32_t p = 0; p < in.dim; ++p) {
    if ((in.dim_order ? in.dim_order[p] : p) != (out.dim_order ? out.dim_order[p] : p)) return Error::KernelFailed;
  }
  const int8_t* table = lut.i8();
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  for (int32_t i = 0; i < in.numel; ++i) y[i] = table[x[i] + 128];
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
