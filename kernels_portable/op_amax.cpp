// mcu-gen-kernel: op=aten::amax.out fn=aten_amax_out sig=TLBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// The largest element over `dim` ([]: all dims), in self's dtype; NaN wins
// (ATen propagates it). An empty reduction is an error, as in ATen.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_amax_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_amax_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  return reduce_extreme<kSet, true>(in, ctx.tensor(3), reduced_dims(ctx, 1, in.dim), ctx.bool_arg(2));
}

}  // namespace kernels
}  // namespace mcu
