// mcu-gen-kernel: op=aten::slice_scatter.out fn=aten_slice_scatter_out sig=TTIiiIOO dtypes=float32,int8,uint8,int16,int32,int64,bool inplace=0 inplace_rule=scatter_self
// aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None,
//                         SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)
// out = self with out[start:end:step] (along dim) = src, the slice taken with
// Python's rules as slice_copy: None is the whole range, negative bounds count
// from the end, bounds past either end clamp; src has the slice's shape.
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

Error aten_slice_scatter_out(const KernelContext& ctx) {
  const TensorRef self = ctx.tensor(0);
  const TensorRef src = ctx.tensor(1);
  const TensorRef out = ctx.tensor(6);
  int32_t dim = 0;
  if (self.dim == 0 || !wrap_dim(ctx.int_arg(2), self.dim, &dim)) return Error::KernelFailed;
  if (!copyable_pair(self, out) || !copyable_pair(src, out) || !self.same_shape(out)) return Error::KernelFailed;
  const int64_t step_arg = ctx.int_arg(5);
  if (step_arg <= 0) return Error::KernelFailed;
  const int32_t n = self.sizes[dim];
  const int32_t start = ctx.is_none(3) ? 0 : clamp_bound(ctx.int_arg(3), n);
  int32_t end = ctx.is_none(4) ? n : clamp_bound(ctx.int_arg(4), n);
  if (end < start) end = start;
  const int32_t step = step_arg < n ? static_cast<int32_t>(step_arg) : (n > 0 ? n : 1);
  const int32_t len = (end - start + step - 1) / step;
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
