// mcu-gen-kernel: op=cortex_m::quantized_conv2d_nhwc.out fn=cmsis_nn_quantized_conv2d_nhwc_out prepare=cmsis_nn_quantized_conv2d_nhwc_prepare sig=TTtLLLIITTIITOO dtypes=int8
//
// cortex_m::quantized_conv2d_nhwc.out(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int input_offset, int output_offset, Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max, Tensor scratch, *, Tensor(a!) out) -> Tensor(a!)
// On CMSIS-NN (cmsis_nn_conv.h; prepared at load: prepare_conv); the scratch tensor (argument 12) is CMSIS-NN's buffer.
#include "cmsis_nn_conv.h"

namespace mcu {
namespace kernels {

Error cmsis_nn_quantized_conv2d_nhwc_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, false, true, &a)) return Error::KernelFailed;
  return cmsis_conv2d(a, ctx.tensor(12));
}

KernelFn cmsis_nn_quantized_conv2d_nhwc_prepare(const KernelContext& ctx) {
  return prepare_conv<false, true, 12>(ctx, &cmsis_nn_quantized_conv2d_nhwc_out);
}

}  // namespace kernels
}  // namespace mcu
