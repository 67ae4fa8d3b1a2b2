// mcu-gen-kernel: op=aten::slice_copy.Tensor_out fn=aten_slice_copy_tensor_out sig=TIiiIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None,
//                             SymInt step=1, *, Tensor(a!) out)
// out = self[start:end:step] along `dim`, with Python's rules: None means the
// whole range, negative values count from the end, out-of-range values clamp.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

namespace {

// Python slice bound: negative counts from the end, then clamped to [0, n].
int32_t clamp_bound(int64_t v, int32_t n) {
  if (v < 0) v += n;
  if (v < 0) return 0;
  return v > n ? n : static_cast<int32_t>(v);
}

}  // namespace

Error aten_slice_copy_tensor_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(5);
  int32_t dim = 0;
  if (in.dim == 0 || !wrap_dim(ctx.int_arg(1), in.dim, &dim)) return Error::KernelFailed;
  const int64_t step_arg = ctx.int_arg(4);
  if (step_arg <= 0) return Error::KernelFailed;
  const int32_t n = in.sizes[dim];
  const int32_t start = ctx.is_none(2) ? 0 : clamp_bound(ctx.int_arg(2), n);
  int32_t end = ctx.is_none(3) ? n : clamp_bound(ctx.int_arg(3), n);
  if (end < start) end = start;
  // A step longer than the dim takes one element at most; clamping it keeps
  // the arithmetic in 32 bits.
  const int32_t step = step_arg < n ? static_cast<int32_t>(step_arg) : (n > 0 ? n : 1);
  const int32_t len = (end - start + step - 1) / step;
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
