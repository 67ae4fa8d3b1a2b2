// mcu-gen-kernel: op=aten::full.out fn=aten_full_out sig=LSOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)
// out = fill_value everywhere (out has the shape size).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_full_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_full_out & kAllTypes;
  const TensorRef out = ctx.tensor(2);
  const IntList size = ctx.int_list(0);
  if (size.size() != out.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < out.dim; ++d) {
    if (size[d] != out.sizes[d]) return Error::KernelFailed;
  }
  return fill_with<kSet>(out, ctx.scalar(1));
}

}  // namespace kernels
}  // namespace mcu
