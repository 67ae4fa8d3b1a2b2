// mcu-gen-kernel: op=aten::stack.out fn=aten_stack_out sig=XIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
// Joins tensors of one shape along a new dim: out has their shape with
// len(tensors) inserted at dim (dim in [-(n+1), n]), out[..., k, ...] = tensors[k].
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_stack_out(const KernelContext& ctx) {
  const TensorRef out = ctx.tensor(2);
  const int32_t count = ctx.list_size(0);
  int32_t dim = 0;
  if (count == 0 || out.dim == 0 || !wrap_dim(ctx.int_arg(1), out.dim, &dim)) return Error::KernelFailed;
  if (out.sizes[dim] != count) return Error::KernelFailed;
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  int32_t dst_strides[kMaxDims];  // out's strides without dim: one input's place
  for (int32_t d = 0, k = 0; d < out.dim; ++d) {
    if (d != dim) dst_strides[k++] = out_strides[d];
  }
  for (int32_t k = 0; k < count; ++k) {
    const TensorRef t = ctx.list_tensor(0, k);
    if (!copyable_pair(t, out) || t.dim != out.dim - 1) return Error::KernelFailed;
    for (int32_t d = 0, i = 0; d < out.dim; ++d) {
      if (d != dim && t.sizes[i++] != out.sizes[d]) return Error::KernelFailed;
    }
    if (t.numel > 0 && t.data == out.data) return Error::KernelFailed;
  }
  const size_t esize = element_size(out);
  for (int32_t k = 0; k < count; ++k) {
    const TensorRef t = ctx.list_tensor(0, k);
    int32_t in_strides[kMaxDims];
    contiguous_strides(t.sizes, t.dim, in_strides);
    uint8_t* dst = static_cast<uint8_t*>(out.data) + static_cast<size_t>(k) * out_strides[dim] * esize;
    strided_copy(dst, dst_strides, t.data, in_strides, t.sizes, t.dim, esize);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
