// mcu-gen-kernel: op=aten::select_scatter.out fn=aten_select_scatter_out sig=TTIIOO dtypes=float32,int8,uint8,int16,int32,int64,bool inplace=0 inplace_rule=scatter_self
// aten::select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)
// out = self with out[..., index, ...] (along dim) = src; src has self's shape
// without dim. A negative index counts from the end; out of range fails.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_select_scatter_out(const KernelContext& ctx) {
  const TensorRef self = ctx.tensor(0);
  const TensorRef src = ctx.tensor(1);
  const TensorRef out = ctx.tensor(4);
  int32_t dim = 0;
  if (self.dim == 0 || !wrap_dim(ctx.int_arg(2), self.dim, &dim)) return Error::KernelFailed;
  if (!copyable_pair(self, out) || !copyable_pair(src, out) || !self.same_shape(out)) return Error::KernelFailed;
  const int64_t n = self.sizes[dim];
  int64_t index = ctx.int_arg(3);
  if (index < 0) index += n;
  if (index < 0 || index >= n || src.dim != self.dim - 1) return Error::KernelFailed;
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  int32_t dst_strides[kMaxDims];  // out's strides with dim left out
  for (int32_t d = 0, s = 0; d < out.dim; ++d) {
    if (d == dim) continue;
    if (src.sizes[s] != out.sizes[d]) return Error::KernelFailed;
    dst_strides[s++] = out_strides[d];
  }
  if (src.numel > 0 && src.data == out.data) return Error::KernelFailed;
  move_bytes(out.data, self.data, out.nbytes());
  int32_t src_strides[kMaxDims];
  contiguous_strides(src.sizes, src.dim, src_strides);
  const size_t esize = element_size(out);
  uint8_t* dst = static_cast<uint8_t*>(out.data) + static_cast<size_t>(index) * out_strides[dim] * esize;
  strided_copy(dst, dst_strides, src.data, src_strides, src.sizes, src.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
