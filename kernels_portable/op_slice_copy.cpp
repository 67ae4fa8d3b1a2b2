// mcu-gen-kernel: op=aten::slice_copy.Tensor_out fn=aten_slice_copy_tensor_out sig=TIiiIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None,
//                             SymInt step=1, *, Tensor(a!) out)
// out = self[start:end:step] along `dim`, with Python's rules: None means the
// whole range, negative values count from the end, out-of-range values clamp.
#include "elementwise_common.h"
#include "slice_common.h"

namespace mcu {
namespace kernels {

Error aten_slice_copy_tensor_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(5);
  int32_t dim = 0;
  if (in.dim == 0 || !wrap_dim(ctx.int_arg(1), in.dim, &dim)) return Error::KernelFailed;
  SliceRange range;
  if (!read_slice(ctx, 2, 3, 4, in.sizes[dim], &range)) return Error::KernelFailed;
  const int32_t start = range.start, step = range.step, len = range.length;
  if (!copyable_pair(in, out) || out.dim != in.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (out.sizes[d] != (d == dim ? len : in.sizes[d])) return Error::KernelFailed;
  }
  int32_t src_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, src_strides);
  const size_t esize = element_size(in);
  const uint8_t* src = static_cast<const uint8_t*>(in.data) + static_cast<size_t>(start) * src_strides[dim] * esize;
  src_strides[dim] *= step;
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  strided_copy(out.data, out_strides, src, src_strides, out.sizes, out.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
