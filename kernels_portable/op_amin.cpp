// mcu-gen-kernel: op=aten::amin.out fn=aten_amin_out sig=TLBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// The smallest element over `dim` ([]: all dims), in self's dtype; NaN wins
// (ATen propagates it). An empty reduction is an error, as in ATen.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_amin_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_amin_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  return reduce_extreme<kSet, false>(in, ctx.tensor(3), reduced_dims(ctx, 1, in.dim), ctx.bool_arg(2));
}

}  // namespace kernels
}  // namespace mcu
