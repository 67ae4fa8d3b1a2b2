// mcu-gen-kernel: op=aten::clone.out fn=aten_clone_out sig=T?OO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
// out = a copy of self in out's layout (dim_order); memory_format is implied
// by out's dim_order and not read.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_clone_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  if (in.dtype != out.dtype || !in.same_shape(out) || element_size(in) == 0) return Error::KernelFailed;
  if (same_dim_order(in, out)) {
    move_bytes(out.data, in.data, out.nbytes());
    return Error::Ok;
  }
  // Layout change (e.g. channels-last to contiguous): walk the logical shape.
  if (in.data == out.data && in.numel > 1) return Error::KernelFailed;
  int32_t in_strides[kMaxDims];
  int32_t out_strides[kMaxDims];
  layout_strides(in, in_strides);
  layout_strides(out, out_strides);
  strided_copy(out.data, out_strides, in.data, in_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
