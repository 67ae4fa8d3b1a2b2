// mcu-gen-kernel: op=aten::ones.out fn=aten_ones_out sig=LOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::ones.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
// out = 1 everywhere (out has the shape size).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_ones_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_ones_out & kAllTypes;
  const TensorRef out = ctx.tensor(1);
  const IntList size = ctx.int_list(0);
  if (size.size() != out.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < out.dim; ++d) {
    if (size[d] != out.sizes[d]) return Error::KernelFailed;
  }
  Scalar v;
  v.i = 1;
  return fill_with<kSet>(out, v);
}

}  // namespace kernels
}  // namespace mcu
