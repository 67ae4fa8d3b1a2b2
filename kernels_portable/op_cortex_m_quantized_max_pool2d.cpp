// mcu-gen-kernel: op=cortex_m::quantized_max_pool2d.out fn=cortex_m_quantized_max_pool2d_out sig=TLLLLBIIIIOO dtypes=int8
//
// cortex_m::quantized_max_pool2d.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, int[] dilation, bool ceil_mode, int input_zero_point, int output_zero_point, int activation_min, int activation_max, *, Tensor(a!) out)
// Arithmetic in int8_pool.h. Input and output: logical NCHW, dim_order (0,2,3,1).
#include "int8_pool.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_max_pool2d_out(const KernelContext& ctx) { return qmax_pool2d(ctx, false); }

}  // namespace kernels
}  // namespace mcu
