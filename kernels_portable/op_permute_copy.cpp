// mcu-gen-kernel: op=aten::permute_copy.out fn=aten_permute_copy_out sig=TLOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out)
// out dim i is self dim dims[i] (negative dims count from the end).
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_permute_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList dims = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (!copyable_pair(in, out) || dims.size() != in.dim || out.dim != in.dim) return Error::KernelFailed;
  if (in.data == out.data && in.numel > 1) return Error::KernelFailed;  // cannot permute in place
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t src_strides[kMaxDims];
  bool used[kMaxDims] = {};
  for (int32_t i = 0; i < in.dim; ++i) {
    int32_t d = 0;
    if (!wrap_dim(dims[i], in.dim, &d) || used[d] || out.sizes[i] != in.sizes[d]) return Error::KernelFailed;
    used[d] = true;
    src_strides[i] = in_strides[d];
  }
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  strided_copy(out.data, out_strides, in.data, src_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
