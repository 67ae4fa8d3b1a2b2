// mcu-gen-kernel: op=aten::prod.int_out fn=aten_prod_int_out sig=TIBiOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None,
//     Tensor(a!) out) -> Tensor(a!)
// Product along dim, accumulating in out's dtype (int64 for integer and bool
// inputs unless `dtype` says otherwise, as in ATen); integer products wrap.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_prod_int_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_prod_int_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(4);
  if (!ctx.is_none(3) && ctx.int_arg(3) != static_cast<int64_t>(out.dtype)) return Error::KernelFailed;
  return reduce_prod<kSet>(in, out, reduced_dim(ctx, 1, in.dim), ctx.bool_arg(2));
}

}  // namespace kernels
}  // namespace mcu
