// mcu-gen-kernel: op=aten::max_pool2d_with_indices.out fn=aten_max_pool2d_with_indices_out sig=TLLLLBOOX dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=7
//
// aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size,
//     int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False,
//     *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
// indices are int64, flat within each H x W plane, as ATen writes them.
// Integer tensors: int_pool.h, only compiled into a program that has them.
#include "f32_pool.h"
#include "int_pool.h"

namespace mcu::kernels {

Error aten_max_pool2d_with_indices_out(const KernelContext& ctx) {
  constexpr DTypeSet kIntSet = selected::aten_max_pool2d_with_indices_out & kIntTypes;
  TensorRef in = ctx.tensor(0);
  TensorRef out = ctx.tensor(6);
  TensorRef indices = ctx.tensor(7);
  if (indices.dtype != DType::Int64 || !indices.is_contiguous() || !indices.same_shape(out)) {
    return Error::KernelFailed;
  }
  if constexpr (kIntSet != 0) {
    if (in.dtype != DType::Float) {
      return max_pool2d_int_planes<kIntSet>(in, out, indices.i64(), ctx.int_list(1), ctx.int_list(2),
                                            ctx.int_list(3), ctx.int_list(4), ctx.bool_arg(5))
                 ? Error::Ok
                 : Error::KernelFailed;
    }
  }
  PoolGeometry g;
  if (!pool_geometry(in, out, ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), ctx.int_list(4), ctx.bool_arg(5),
                     &g)) {
    return Error::KernelFailed;
  }
  max_pool2d_f32<true>(in.f32(), out.f32(), indices.i64(), g);
  return Error::Ok;
}

}  // namespace mcu::kernels
