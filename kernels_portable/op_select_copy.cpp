// mcu-gen-kernel: op=aten::select_copy.int_out fn=aten_select_copy_int_out sig=TIIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out)
// out = self[..., index, ...] along `dim`; `out` has self's shape without dim.
// A negative index counts from the end.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_select_copy_int_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  int32_t dim = 0;
  if (in.dim == 0 || !wrap_dim(ctx.int_arg(1), in.dim, &dim)) return Error::KernelFailed;
  const int64_t n = in.sizes[dim];
  int64_t index = ctx.int_arg(2);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return Error::KernelFailed;
  if (!copyable_pair(in, out) || out.dim != in.dim - 1) return Error::KernelFailed;
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t src_strides[kMaxDims];  // self's strides with dim left out
  for (int32_t d = 0, o = 0; d < in.dim; ++d) {
    if (d == dim) continue;
    if (out.sizes[o] != in.sizes[d]) return Error::KernelFailed;
    src_strides[o++] = in_strides[d];
  }
  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  const size_t esize = element_size(in);
  const uint8_t* src = static_cast<const uint8_t*>(in.data) + static_cast<size_t>(index) * in_strides[dim] * esize;
  strided_copy(out.data, out_strides, src, src_strides, out.sizes, out.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
