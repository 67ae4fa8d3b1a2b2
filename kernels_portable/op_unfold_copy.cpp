// mcu-gen-kernel: op=aten::unfold_copy.out fn=aten_unfold_copy_out sig=TIIIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::unfold_copy.out(Tensor self, int dimension, int size, int step, *, Tensor(a!) out) -> Tensor(a!)
// Every window of `size` elements along `dimension`, `step` apart: out has self's
// shape with that dim (n - size) / step + 1 long, then a new last dim of `size`;
// out[..., w, ..., k] = self[..., w * step + k, ...]. A 0-dim self is one element.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_unfold_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const int64_t size = ctx.int_arg(2);
  const int64_t step = ctx.int_arg(3);
  const TensorRef out = ctx.tensor(4);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &dim) || !copyable_pair(in, out)) return Error::KernelFailed;
  if (in.dim >= kMaxDims || out.dim != (in.dim == 0 ? 1 : in.dim + 1)) return Error::KernelFailed;
  const int64_t n = in.dim == 0 ? 1 : in.sizes[dim];
  if (size < 0 || size > n || step <= 0) return Error::KernelFailed;
  if (in.dim == 0) {
    if (out.sizes[0] != size) return Error::KernelFailed;
    return size == 0 ? Error::Ok : copy_same_elements(in, out);
  }
  const int64_t windows = (n - size) / step + 1;
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t src_strides[kMaxDims];
  for (int32_t d = 0; d < in.dim; ++d) {
    if (out.sizes[d] != (d == dim ? windows : in.sizes[d])) return Error::KernelFailed;
    src_strides[d] = d == dim ? static_cast<int32_t>(step < n ? step : n) * in_strides[d] : in_strides[d];
  }
  if (out.sizes[in.dim] != size) return Error::KernelFailed;
  src_strides[in.dim] = in_strides[dim];
  if (out.numel == 0) return Error::Ok;
  if (in.data == out.data) return Error::KernelFailed;
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  strided_copy(out.data, out_strides, in.data, src_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
