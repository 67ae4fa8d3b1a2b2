// mcu-gen-kernel: op=cortex_m::quantized_conv2d.out fn=cortex_m_quantized_conv2d_out sig=TTtLLLIITTIITOO dtypes=int8
//
// cortex_m::quantized_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int input_offset, int output_offset, Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max, Tensor scratch, *, Tensor(a!) out) -> Tensor(a!)
// int8 convolution with per-channel requantization; layouts and arithmetic
// in int8_conv.h. Input and output: logical NCHW, dim_order (0,2,3,1).
#include "int8_conv.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_conv2d_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, false, false, &a)) return Error::KernelFailed;
  return qconv2d(a);
}

}  // namespace kernels
}  // namespace mcu
