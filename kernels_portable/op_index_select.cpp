// mcu-gen-kernel: op=aten::index_select.out fn=aten_index_select_out sig=TITOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)
// out = self with dim `dim` replaced by self[index[i]] (index 1-d or 0-d,
// int64/int32, each checked against the size: out of range fails the call).
#include <string.h>

#include "elementwise_common.h"
#include "index_common.h"

namespace mcu {
namespace kernels {

Error aten_index_select_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef index = ctx.tensor(2);
  const TensorRef out = ctx.tensor(3);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(1), in.dim, &dim) || !is_index_dtype(index.dtype) || index.dim > 1) return Error::KernelFailed;
  if (out.dtype != in.dtype || !in.is_contiguous() || !out.is_contiguous() || !index.is_contiguous())
    return Error::KernelFailed;
  const int32_t d_in = in.dim == 0 ? 1 : in.sizes[dim];
  if (out.dim != in.dim) return Error::KernelFailed;
  int32_t outer = 1, inner = 1;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (d == dim) {
      if (out.sizes[d] != index.numel) return Error::KernelFailed;
      continue;
    }
    if (out.sizes[d] != in.sizes[d]) return Error::KernelFailed;
    (d < dim ? outer : inner) *= in.sizes[d];
  }
  if (in.dim == 0 && index.numel != 1) return Error::KernelFailed;
  const size_t row = static_cast<size_t>(inner) * dtype_size(in.dtype);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  const int32_t n = index.numel;
  for (int32_t i = 0; i < n; ++i) {
    int32_t p = 0;
    if (!read_index(index, i, d_in, &p)) return Error::KernelFailed;
  }
  for (int32_t o = 0; o < outer; ++o) {
    for (int32_t i = 0; i < n; ++i) {
      int32_t p = 0;
      read_index(index, i, d_in, &p);
      memcpy(dst + (static_cast<size_t>(o) * n + i) * row, src + (static_cast<size_t>(o) * d_in + p) * row, row);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
