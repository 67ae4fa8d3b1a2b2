// mcu-gen-kernel: op=cortex_m::minimum.out fn=cortex_m_minimum_out sig=TTOO dtypes=int8
//
// cortex_m::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out)
// Elementwise smaller of two int8 tensors that share quantization parameters
// (torch.minimum); shapes broadcast (numpy rules, any dim_order).
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_minimum_out(const KernelContext& ctx) {
  return broadcast_binary_int8(ctx.tensor(0), ctx.tensor(1), ctx.tensor(2),
                               [](int8_t x, int8_t y) { return static_cast<int8_t>(x < y ? x : y); });
}

}  // namespace kernels
}  // namespace mcu
