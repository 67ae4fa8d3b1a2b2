// mcu-gen-kernel: op=aten::expand_copy.out fn=aten_expand_copy_out sig=TLBOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out)
// out = self broadcast to `size` (NumPy rules; -1 keeps self's size, new
// leading dims may have any size).
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_expand_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList size = ctx.int_list(1);
  const TensorRef out = ctx.tensor(3);
  if (!copyable_pair(in, out) || size.size() != out.dim || out.dim < in.dim) return Error::KernelFailed;
  const int32_t lead = out.dim - in.dim;
  for (int32_t d = 0; d < out.dim; ++d) {
    const int64_t s = size[d];
    const int64_t want = (s == -1 && d >= lead) ? in.sizes[d - lead] : s;
    if (want != out.sizes[d]) return Error::KernelFailed;
  }
  if (in.data == out.data && out.numel > 1) return Error::KernelFailed;  // cannot expand in place
  int32_t src_strides[kMaxDims];
  if (!broadcast_strides(in, out, src_strides)) return Error::KernelFailed;
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  strided_copy(out.data, out_strides, in.data, src_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
