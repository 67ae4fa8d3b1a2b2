// mcu-gen-kernel: op=aten::gather.out fn=aten_gather_out sig=TITBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)
// out[i][j][k] = self[index[i][j][k]][j][k] (dim 0): out has index's shape,
// index the same number of dims as self and no larger elsewhere. Every index
// is checked against self's size along dim.
#include <string.h>

#include "elementwise_common.h"
#include "index_common.h"

namespace mcu {
namespace kernels {

Error aten_gather_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef index = ctx.tensor(2);
  const TensorRef out = ctx.tensor(4);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &dim) || !is_index_dtype(index.dtype)) return Error::KernelFailed;
  if (out.dtype != in.dtype || !in.is_contiguous() || !out.is_contiguous() || !index.is_contiguous())
    return Error::KernelFailed;
  if (in.dim > kMaxDims || !out.same_shape(index)) return Error::KernelFailed;
  if (index.numel == 0) return Error::Ok;
  if (index.dim != (in.dim == 0 ? 0 : in.dim) && !(in.dim == 0 && index.dim <= 1)) return Error::KernelFailed;
  int32_t in_stride[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_stride);
  for (int32_t d = 0; d < in.dim; ++d) {
    if (d != dim && index.sizes[d] > in.sizes[d]) return Error::KernelFailed;
  }
  const int32_t size = in.dim == 0 ? 1 : in.sizes[dim];
  const size_t es = dtype_size(in.dtype);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  int32_t pos[kMaxDims] = {};
  for (int32_t i = 0; i < index.numel; ++i) {
    int32_t p = 0;
    if (!read_index(index, i, size, &p)) return Error::KernelFailed;
    int32_t offset = 0;
    for (int32_t d = 0; d < in.dim; ++d) offset += (d == dim ? p : pos[d]) * in_stride[d];
    memcpy(dst + static_cast<size_t>(i) * es, src + static_cast<size_t>(offset) * es, es);
    for (int32_t d = index.dim - 1; d >= 0; --d) {
      if (++pos[d] < index.sizes[d]) break;
      pos[d] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
