// mcu-gen-kernel: op=cortex_m::quantized_avg_pool2d_nhwc.out fn=cmsis_nn_quantized_avg_pool2d_nhwc_out prepare=cmsis_nn_quantized_avg_pool2d_nhwc_prepare sig=TLLLBIIITOO dtypes=int8
//
// cortex_m::quantized_avg_pool2d_nhwc.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, int zero_point, int multiplier, int shift, Tensor scratch, *, Tensor(a!) out)
// On CMSIS-NN (cmsis_nn_pool.h; prepared at load: prepare_pool).
#include "cmsis_nn_pool.h"

namespace mcu {
namespace kernels {

Error cmsis_nn_quantized_avg_pool2d_nhwc_out(const KernelContext& ctx) { return cmsis_avg_pool2d(ctx, true); }

KernelFn cmsis_nn_quantized_avg_pool2d_nhwc_prepare(const KernelContext& ctx) {
  return prepare_pool<true, true>(ctx, &cmsis_nn_quantized_avg_pool2d_nhwc_out);
}

}  // namespace kernels
}  // namespace mcu
