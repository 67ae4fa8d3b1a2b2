// mcu-gen-kernel: op=cortex_m::quantized_max_pool2d_nhwc.out fn=cortex_m_quantized_max_pool2d_nhwc_out sig=TLLLLBIIIIOO dtypes=int8
//
// cortex_m::quantized_max_pool2d_nhwc.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, int[] dilation, bool ceil_mode, int input_zero_point, int output_zero_point, int activation_min, int activation_max, *, Tensor(a!) out)
// Arithmetic in int8_pool.h. Input and output: logical NHWC, contiguous.
#include "int8_pool.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_max_pool2d_nhwc_out(const KernelContext& ctx) { return qmax_pool2d(ctx, true); }

}  // namespace kernels
}  // namespace mcu
