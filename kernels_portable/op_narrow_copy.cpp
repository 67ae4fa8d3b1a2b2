// mcu-gen-kernel: op=aten::narrow_copy.out fn=aten_narrow_copy_out sig=TIIIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *, Tensor(a!) out) -> Tensor(a!)
// out = self[start : start + length] along dim; a negative start counts from
// the end; the range must lie inside the dim (no clamping, as in ATen).
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_narrow_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(4);
  int32_t dim = 0;
  if (in.dim == 0 || !wrap_dim(ctx.int_arg(1), in.dim, &dim)) return Error::KernelFailed;
  const int64_t n = in.sizes[dim];
  int64_t start = ctx.int_arg(2);
  const int64_t length = ctx.int_arg(3);
  if (start < 0) start += n;
  if (start < 0 || start > n || length < 0 || length > n - start) return Error::KernelFailed;
  if (!copyable_pair(in, out) || out.dim != in.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (out.sizes[d] != (d == dim ? length : in.sizes[d])) return Error::KernelFailed;
  }
  if (out.numel == 0) return Error::Ok;
  if (in.data == out.data) return Error::KernelFailed;
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  const size_t esize = element_size(in);
  const uint8_t* src = static_cast<const uint8_t*>(in.data) + static_cast<size_t>(start) * in_strides[dim] * esize;
  strided_copy(out.data, out_strides, src, in_strides, out.sizes, out.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
