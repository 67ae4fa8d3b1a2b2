// mcu-gen-kernel: op=cortex_m::quantized_avg_pool2d.out fn=cmsis_nn_quantized_avg_pool2d_out prepare=cmsis_nn_quantized_avg_pool2d_prepare sig=TLLLBIIITOO dtypes=int8
//
// cortex_m::quantized_avg_pool2d.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, int zero_point, int multiplier, int shift, Tensor scratch, *, Tensor(a!) out)
// On CMSIS-NN (cmsis_nn_pool.h; prepared at load: prepare_pool).
#include "cmsis_nn_pool.h"

namespace mcu {
namespace kernels {

Error cmsis_nn_quantized_avg_pool2d_out(const KernelContext& ctx) { return cmsis_avg_pool2d(ctx, false); }

KernelFn cmsis_nn_quantized_avg_pool2d_prepare(const KernelContext& ctx) {
  return prepare_pool<true, false>(ctx, &cmsis_nn_quantized_avg_pool2d_out);
}

}  // namespace kernels
}  // namespace mcu
