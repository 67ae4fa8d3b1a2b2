// mcu-gen-kernel: op=aten::squeeze_copy.dims_out fn=aten_squeeze_copy_dims_out sig=TLOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out)
// out = self without those of the listed dims that have size 1 (listed dims of
// another size stay). A plain copy; out may be the same memory as self.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_squeeze_copy_dims_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList dims = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  bool drop[kMaxDims] = {};
  for (int32_t k = 0; k < dims.size(); ++k) {
    int32_t d = 0;
    if (!wrap_dim(dims[k], in.dim, &d)) return Error::KernelFailed;
    if (in.dim > 0 && in.sizes[d] == 1) drop[d] = true;
  }
  int32_t o = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (drop[d]) continue;
    if (o >= out.dim || out.sizes[o] != in.sizes[d]) return Error::KernelFailed;
    ++o;
  }
  if (o != out.dim) return Error::KernelFailed;
  return copy_same_elements(in, out);
}

}  // namespace kernels
}  // namespace mcu
