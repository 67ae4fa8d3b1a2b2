// mcu-gen-kernel: op=aten::prod.out fn=aten_prod_out sig=TiOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// Product of all elements into a 0-dim out, accumulating in out's dtype (int64 for
// integer and bool inputs unless `dtype` says otherwise, as in ATen); integer products wrap.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_prod_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_prod_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  if (!ctx.is_none(1) && ctx.int_arg(1) != static_cast<int64_t>(out.dtype)) return Error::KernelFailed;
  return reduce_prod<kSet>(in, out, ReducedDims{}, false);
}

}  // namespace kernels
}  // namespace mcu
