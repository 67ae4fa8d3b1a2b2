// mcu-gen-kernel: op=aten::as_strided_copy.out fn=aten_as_strided_copy_out sig=TLLiOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None, *,
//                           Tensor(a!) out) -> Tensor(a!)
// out[i0, i1, ...] = storage[storage_offset + i0 * stride[0] + i1 * stride[1] + ...], the storage
// being self's elements (contiguous, from self's first element; None offset is 0). Sizes and
// strides must be non-negative (as in ATen), and the last element read must lie inside self:
// a view past self's elements fails instead of reading beyond them.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_as_strided_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList size = ctx.int_list(1);
  const IntList stride = ctx.int_list(2);
  const TensorRef out = ctx.tensor(4);
  const int64_t offset = ctx.is_none(3) ? 0 : ctx.int_arg(3);
  if (!copyable_pair(in, out) || size.size() != out.dim || stride.size() != out.dim || offset < 0)
    return Error::KernelFailed;
  int32_t src_strides[kMaxDims];
  int64_t last = offset;  // element offset of the last element read
  for (int32_t d = 0; d < out.dim; ++d) {
    const int64_t s = stride[d];
    if (size[d] != out.sizes[d] || s < 0) return Error::KernelFailed;
    if (out.numel > 0 && out.sizes[d] > 1) {
      if (s > in.numel) return Error::KernelFailed;  // the second element along d would be outside
      last += static_cast<int64_t>(out.sizes[d] - 1) * s;
      if (last >= in.numel) return Error::KernelFailed;
    }
    src_strides[d] = out.sizes[d] > 1 ? static_cast<int32_t>(s) : 0;  // a size-1 dim's stride is never used
  }
  if (out.numel == 0) return Error::Ok;
  if (last >= in.numel) return Error::KernelFailed;  // also a 0-dim out past self
  if (in.data == out.data) return Error::KernelFailed;
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  const size_t esize = element_size(in);
  const uint8_t* src = static_cast<const uint8_t*>(in.data) + static_cast<size_t>(offset) * esize;
  if (out.dim == 0) {
    memcpy(out.data, src, esize);
    return Error::Ok;
  }
  strided_copy(out.data, out_strides, src, src_strides, out.sizes, out.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
