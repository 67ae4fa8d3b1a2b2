// mcu-gen-kernel: op=aten::view_copy.out fn=aten_view_copy_out sig=TLOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out)
// out = self reshaped to `size` (one entry may be -1). The elements keep their
// order, so this is a plain copy; out may be the same memory as self.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_view_copy_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList size = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (size.size() != out.dim) return Error::KernelFailed;
  int32_t inferred = 0;
  for (int32_t d = 0; d < out.dim; ++d) {
    const int64_t s = size[d];
    if (s == -1 && ++inferred == 1) continue;
    if (s != out.sizes[d]) return Error::KernelFailed;
  }
  return copy_same_elements(in, out);
}

}  // namespace kernels
}  // namespace mcu
