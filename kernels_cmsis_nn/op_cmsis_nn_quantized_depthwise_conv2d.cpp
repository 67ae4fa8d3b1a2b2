// mcu-gen-kernel: op=cortex_m::quantized_depthwise_conv2d.out fn=cmsis_nn_quantized_depthwise_conv2d_out prepare=cmsis_nn_quantized_depthwise_conv2d_prepare sig=TTtLLLIIITTIITOO dtypes=int8
//
// cortex_m::quantized_depthwise_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int depth_multiplier, int input_offset, int output_offset, Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max, Tensor scratch, *, Tensor(a!) out) -> Tensor(a!)
// On CMSIS-NN (cmsis_nn_conv.h; prepared at load: prepare_conv); the scratch tensor (argument 13) is CMSIS-NN's buffer.
#include "cmsis_nn_conv.h"

namespace mcu {
namespace kernels {

Error cmsis_nn_quantized_depthwise_conv2d_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, true, false, &a)) return Error::KernelFailed;
  return cmsis_depthwise_conv2d(a, ctx.tensor(13));
}

KernelFn cmsis_nn_quantized_depthwise_conv2d_prepare(const KernelContext& ctx) {
  return prepare_conv<true, false, 13>(ctx, &cmsis_nn_quantized_depthwise_conv2d_out);
}

}  // namespace kernels
}  // namespace mcu
