// mcu-gen-kernel: op=aten::flip.out fn=aten_flip_out sig=TLOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)
// Reverses self along each dim in `dims` (negative counts from the end; a dim
// listed twice is an error, as in ATen): one strided copy reading the flipped
// dims with negative strides.
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_flip_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList dims = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (!copyable_pair(in, out) || !in.same_shape(out)) return Error::KernelFailed;
  bool flipped[kMaxDims] = {};
  for (int32_t k = 0; k < dims.size(); ++k) {
    int32_t d = 0;
    if (!wrap_dim(dims[k], in.dim, &d) || flipped[d]) return Error::KernelFailed;
    flipped[d] = true;
  }
  if (in.numel == 0) return Error::Ok;
  if (in.data == out.data) return Error::KernelFailed;
  if (in.dim == 0) return copy_same_elements(in, out);
  int32_t out_strides[kMaxDims];
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, out_strides);
  contiguous_strides(in.sizes, in.dim, in_strides);
  size_t start = 0;  // element offset of the first element read
  for (int32_t d = 0; d < in.dim; ++d) {
    if (!flipped[d]) continue;
    start += static_cast<size_t>(in.sizes[d] - 1) * in_strides[d];
    in_strides[d] = -in_strides[d];
  }
  const size_t esize = element_size(in);
  strided_copy(out.data, out_strides, static_cast<const uint8_t*>(in.data) + start * esize, in_strides, in.sizes,
               in.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
