// mcu-gen-kernel: op=aten::split_with_sizes_copy.out fn=aten_split_with_sizes_copy_out sig=TLIY dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()
// Copies consecutive chunks of `self` along `dim` into the out tensors.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_split_with_sizes_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList split_sizes = ctx.int_list(1);
  const int32_t count = ctx.list_size(3);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(2), in.dim, &dim) || in.dim == 0) return Error::KernelFailed;
  if (split_sizes.size() != count) return Error::KernelFailed;
  // Check every out tensor, and that the chunks cover self exactly.
  int64_t total = 0;
  for (int32_t k = 0; k < count; ++k) {
    const TensorRef t = ctx.list_tensor(3, k);
    const int64_t n = split_sizes[k];
    if (!copyable_pair(in, t) || t.dim != in.dim || n < 0 || n != t.sizes[dim]) return Error::KernelFailed;
    for (int32_t d = 0; d < in.dim; ++d) {
      if (d != dim && t.sizes[d] != in.sizes[d]) return Error::KernelFailed;
    }
    total += n;
  }
  if (total != in.sizes[dim]) return Error::KernelFailed;

  const size_t esize = element_size(in);
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  int32_t start = 0;
  for (int32_t k = 0; k < count; ++k) {
    const TensorRef t = ctx.list_tensor(3, k);
    int32_t out_strides[kMaxDims];
    contiguous_strides(t.sizes, t.dim, out_strides);
    strided_copy(t.data, out_strides, src + static_cast<size_t>(start) * in_strides[dim] * esize, in_strides,
                 t.sizes, t.dim, esize);
    start += t.sizes[dim];
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
