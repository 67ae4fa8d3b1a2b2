// mcu-gen-kernel: op=aten::slice_scatter.out fn=aten_slice_scatter_out sig=TTIiiIOO dtypes=float32,int8,uint8,int16,int32,int64,bool inplace=0 inplace_rule=scatter_self
// aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None,
//                         SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)
// out = self with out[start:end:step] (along dim) = src, the slice taken with
// Python's rules as slice_copy: None is the whole range, negative bounds count
// from the end, bounds past either end clamp; src has the slice's shape.
#include "elementwise_common.h"
#include "slice_common.h"

namespace mcu {
namespace kernels {

Error aten_slice_scatter_out(const KernelContext& ctx) {
  const TensorRef self = ctx.tensor(0);
  const TensorRef src = ctx.tensor(1);
  const TensorRef out = ctx.tensor(6);
  int32_t dim = 0;
  if (self.dim == 0 || !wrap_dim(ctx.int_arg(2), self.dim, &dim)) return Error::KernelFailed;
  if (!copyable_pair(self, out) || !copyable_pair(src, out) || !self.same_shape(out)) return Error::KernelFailed;
  SliceRange range;
  if (!read_slice(ctx, 3, 4, 5, self.sizes[dim], &range)) return Error::KernelFailed;
  const int32_t start = range.start, step = range.step, len = range.length;
  if (src.dim != self.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < self.dim; ++d) {
    if (src.sizes[d] != (d == dim ? len : self.sizes[d])) return Error::KernelFailed;
  }
  if (src.numel > 0 && src.data == out.data) return Error::KernelFailed;
  move_bytes(out.data, self.data, out.nbytes());
  int32_t dst_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, dst_strides);
  const size_t esize = element_size(out);
  uint8_t* dst = static_cast<uint8_t*>(out.data) + static_cast<size_t>(start) * dst_strides[dim] * esize;
  dst_strides[dim] *= step;
  int32_t src_strides[kMaxDims];
  contiguous_strides(src.sizes, src.dim, src_strides);
  strided_copy(dst, dst_strides, src.data, src_strides, src.sizes, src.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
