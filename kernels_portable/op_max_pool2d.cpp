// mcu-gen-kernel: op=mcu::max_pool2d.out fn=mcu_max_pool2d_out sig=TLLLLBOO dtypes=float32
//
// mcu::max_pool2d.out(Tensor self, int[] kernel_size, int[] stride,
//     int[] padding, int[] dilation, bool ceil_mode, *, Tensor(a!) out) -> Tensor(a!)
// aten::max_pool2d_with_indices without the indices.
#include "f32_pool.h"

namespace mcu::kernels {

Error mcu_max_pool2d_out(const KernelContext& ctx) {
  TensorRef in = ctx.tensor(0);
  TensorRef out = ctx.tensor(6);
  PoolGeometry g;
  if (!pool_geometry(in, out, ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), ctx.int_list(4), ctx.bool_arg(5),
                     &g)) {
    return Error::KernelFailed;
  }
  max_pool2d_f32<false>(in.f32(), out.f32(), nullptr, g);
  return Error::Ok;
}

}  // namespace mcu::kernels
