// mcu-gen-kernel: op=aten::split_copy.Tensor_out fn=aten_split_copy_tensor_out sig=TIIY dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()
// Copies consecutive chunks of split_size elements of `self` along `dim` into the out
// tensors, the last chunk the rest (as ATen: ceil(size / split_size) chunks, at least one).
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_split_copy_tensor_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const int64_t split = ctx.int_arg(1);
  const int32_t count = ctx.list_size(3);
  int32_t dim = 0;
  if (in.dim == 0 || !wrap_dim(ctx.int_arg(2), in.dim, &dim) || split < 0) return Error::KernelFailed;
  const int64_t size = in.sizes[dim];
  if (split == 0 && size != 0) return Error::KernelFailed;
  const int64_t chunks = split == 0 ? 1 : (size + split - 1) / split;
  if (count != (chunks > 0 ? chunks : 1)) return Error::KernelFailed;
  int64_t start = 0;
  for (int32_t k = 0; k < count; ++k) {
    const int64_t rest = size - start;
    const int64_t n = rest < split ? rest : split;
    const Error e = copy_chunk(in, dim, static_cast<int32_t>(start), static_cast<int32_t>(n), ctx.list_tensor(3, k), false);
    if (e != Error::Ok) return e;
    start += n;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
