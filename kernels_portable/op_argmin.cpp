// mcu-gen-kernel: op=aten::argmin.out fn=aten_argmin_out sig=TiBOO dtypes=float32,uint8,int8,int16,int32,int64
// aten::argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// int64 index of the minimum along dim (None: of the flattened input); the
// first on ties, the first NaN if any (as ATen). An empty reduction fails.
#include "arg_reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_argmin_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_argmin_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (out.dtype != DType::Int64) return Error::KernelFailed;
  Reduction r;
  if (!r.init(in, reduced_dim(ctx, 1, in.dim)) || !r.matches(out, ctx.bool_arg(2))) return Error::KernelFailed;
  if (r.count() == 0 && r.out_numel() > 0) return Error::KernelFailed;
  return arg_reduce<kSet, false>(r, in, nullptr, static_cast<int64_t*>(out.data))
             ? Error::Ok
             : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
