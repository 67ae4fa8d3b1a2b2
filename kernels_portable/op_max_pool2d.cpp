// mcu-gen-kernel: op=mcu::max_pool2d.out fn=mcu_max_pool2d_out sig=TLLLLBOO dtypes=float32,uint8,int8,int16,int32,int64
//
// mcu::max_pool2d.out(Tensor self, int[] kernel_size, int[] stride,
//     int[] padding, int[] dilation, bool ceil_mode, *, Tensor(a!) out) -> Tensor(a!)
// aten::max_pool2d_with_indices without the indices. Integer tensors: int_pool.h,
// only compiled into a program that has them.
#include "f32_pool.h"
#include "int_pool.h"

namespace mcu::kernels {

Error mcu_max_pool2d_out(const KernelContext& ctx) {
  constexpr DTypeSet kIntSet = selected::mcu_max_pool2d_out & kIntTypes;
  TensorRef in = ctx.tensor(0);
  TensorRef out = ctx.tensor(6);
  if constexpr (kIntSet != 0) {
    if (in.dtype != DType::Float) {
      return max_pool2d_int_planes<kIntSet>(in, out, nullptr, ctx.int_list(1), ctx.int_list(2), ctx.int_list(3),
                                            ctx.int_list(4), ctx.bool_arg(5))
                 ? Error::Ok
                 : Error::KernelFailed;
    }
  }
  PoolGeometry g;
  if (!pool_geometry(in, out, ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), ctx.int_list(4), ctx.bool_arg(5),
                     &g)) {
    return Error::KernelFailed;
  }
  const bool two_by_two = g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 &&
                          g.pad_h == 0 && g.pad_w == 0 && g.dil_h == 1 && g.dil_w == 1 &&
                          2 * g.out_h <= g.in_h && 2 * g.out_w <= g.in_w;
  if (two_by_two) {
    max_pool2x2_f32(in.f32(), out.f32(), g);
  } else {
    max_pool2d_f32<false>(in.f32(), out.f32(), nullptr, g);
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
