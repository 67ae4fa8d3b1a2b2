// mcu-gen-kernel: op=aten::diagonal_copy.out fn=aten_diagonal_copy_out sig=TIIIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *, Tensor(a!) out) -> Tensor(a!)
// The diagonal of the (dim1, dim2) planes: out has self's other dims, then the
// diagonal's length; out[..., k] = self[..., k, k + offset] (k - offset, k for
// a negative offset). An offset past the plane gives an empty diagonal.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_diagonal_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const int64_t offset = ctx.int_arg(1);
  const TensorRef out = ctx.tensor(4);
  int32_t d1 = 0, d2 = 0;
  if (in.dim < 2 || !wrap_dim(ctx.int_arg(2), in.dim, &d1) || !wrap_dim(ctx.int_arg(3), in.dim, &d2) || d1 == d2)
    return Error::KernelFailed;
  if (!copyable_pair(in, out) || out.dim != in.dim - 1) return Error::KernelFailed;
  const int64_t n1 = in.sizes[d1], n2 = in.sizes[d2];
  int64_t len = offset >= 0 ? (n1 < n2 - offset ? n1 : n2 - offset) : (n1 + offset < n2 ? n1 + offset : n2);
  if (len < 0) len = 0;
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t src_strides[kMaxDims];
  for (int32_t d = 0, k = 0; d < in.dim; ++d) {
    if (d == d1 || d == d2) continue;
    if (out.sizes[k] != in.sizes[d]) return Error::KernelFailed;
    src_strides[k++] = in_strides[d];
  }
  if (out.sizes[out.dim - 1] != len) return Error::KernelFailed;
  src_strides[out.dim - 1] = in_strides[d1] + in_strides[d2];
  if (out.numel == 0) return Error::Ok;
  if (in.data == out.data) return Error::KernelFailed;
  // First element: (0, offset) or (-offset, 0) of the plane, inside it since len > 0.
  const size_t start = offset >= 0 ? static_cast<size_t>(offset) * in_strides[d2]
                                   : static_cast<size_t>(-offset) * in_strides[d1];
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  const size_t esize = element_size(in);
  strided_copy(out.data, out_strides, static_cast<const uint8_t*>(in.data) + start * esize, src_strides, out.sizes,
               out.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
