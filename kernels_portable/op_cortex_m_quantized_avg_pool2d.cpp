// mcu-gen-kernel: op=cortex_m::quantized_avg_pool2d.out fn=cortex_m_quantized_avg_pool2d_out sig=TLLLBIIITOO dtypes=int8
//
// cortex_m::quantized_avg_pool2d.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, int zero_point, int multiplier, int shift, Tensor scratch, *, Tensor(a!) out)
// Arithmetic in int8_pool.h. Input and output: logical NCHW, dim_order (0,2,3,1).
#include "int8_pool.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_avg_pool2d_out(const KernelContext& ctx) { return qavg_pool2d(ctx, false); }

}  // namespace kernels
}  // namespace mcu
