// mcu-gen-kernel: op=cortex_m::quantized_avg_pool2d_nhwc.out fn=cortex_m_quantized_avg_pool2d_nhwc_out sig=TLLLBIIITOO dtypes=int8
//
// cortex_m::quantized_avg_pool2d_nhwc.out(Tensor input, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, int zero_point, int multiplier, int shift, Tensor scratch, *, Tensor(a!) out)
// Arithmetic in int8_pool.h. Input and output: logical NHWC, contiguous.
#include "int8_pool.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_avg_pool2d_nhwc_out(const KernelContext& ctx) { return qavg_pool2d(ctx, true); }

}  // namespace kernels
}  // namespace mcu
