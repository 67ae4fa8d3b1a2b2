// mcu-gen-kernel: op=mcu::quantized_max_pool2d_inplace.out fn=mcu_quantized_max_pool2d_inplace_out sig=TLLLLBIIIIOO dtypes=int8 inplace=0 inplace_rule=pool_forward variant_of=cortex_m::quantized_max_pool2d.out
//
// cortex_m::quantized_max_pool2d.out's arguments and results, computed so that
// the output may occupy the input's memory: output pixels in raster order (a
// pass per group of channels for 2x2 windows), and each output byte is written
// only after its channel of the whole window was read. Safe in place when no
// output pixel's window starts before that pixel's own index (e.g. 2x2 stride 2,
// no padding); the planner checks this (rule pool_forward in
// mcu_gen/plan/inplace.py) before switching to this kernel.
// Same code as quantized_max_pool2d (int8_pool.h), whose loop order allows it.
#include "int8_pool.h"

namespace mcu {
namespace kernels {

Error mcu_quantized_max_pool2d_inplace_out(const KernelContext& ctx) {
  return qmax_pool2d(ctx, false);  // its loop order is already safe in place
}

}  // namespace kernels
}  // namespace mcu
