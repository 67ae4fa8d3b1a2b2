// mcu-gen-kernel: op=aten::max.dim_max fn=aten_max_dim_max sig=TIBOOX dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values)
//     -> (Tensor(a!) values, Tensor(b!) indices)
// The maximum along dim and its int64 index (first on ties, first NaN if any).
#include "arg_reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_max_dim_max(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_max_dim_max & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef values = ctx.tensor(3);
  const TensorRef indices = ctx.tensor(4);
  if (values.dtype != in.dtype || indices.dtype != DType::Int64) return Error::KernelFailed;
  Reduction r;
  const bool keepdim = ctx.bool_arg(2);
  if (!r.init(in, reduced_dim(ctx, 1, in.dim)) || !r.matches(values, keepdim) || !r.matches(indices, keepdim)) {
    return Error::KernelFailed;
  }
  if (r.count() == 0 && r.out_numel() > 0) return Error::KernelFailed;
  return arg_reduce<kSet, true>(r, in, values.data, static_cast<int64_t*>(indices.data))
             ? Error::Ok
             : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
