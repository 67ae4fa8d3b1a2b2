// mcu-gen-kernel: op=cortex_m::maximum.out fn=cortex_m_maximum_out sig=TTOO dtypes=int8
//
// cortex_m::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out)
// Elementwise larger of two int8 tensors that share quantization parameters
// (torch.maximum); shapes broadcast (numpy rules, any dim_order).
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_maximum_out(const KernelContext& ctx) {
  return broadcast_binary_int8(ctx.tensor(0), ctx.tensor(1), ctx.tensor(2),
                               [](int8_t x, int8_t y) { return static_cast<int8_t>(x > y ? x : y); });
}

}  // namespace kernels
}  // namespace mcu
