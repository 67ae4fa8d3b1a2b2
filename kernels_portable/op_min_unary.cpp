// mcu-gen-kernel: op=aten::min.unary_out fn=aten_min_unary_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::min.unary_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// The smallest element of the whole tensor (x.min()) into a 0-dim out of self's dtype; NaN
// wins (ATen propagates it). An empty input is an error, as in ATen.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_min_unary_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_min_unary_out & kAllTypes;
  return reduce_extreme<kSet, false>(ctx.tensor(0), ctx.tensor(1), ReducedDims{}, false);
}

}  // namespace kernels
}  // namespace mcu
