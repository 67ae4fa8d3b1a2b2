// mcu-gen-kernel: op=aten::mean.dtype_out fn=aten_mean_dtype_out sig=TiOO dtypes=float32,uint8,int8,int16,int32,int64
// aten::mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// Mean of all elements into a 0-dim float32 out (an integer input needs dtype=float32, as in
// ATen); an empty input gives NaN.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_mean_dtype_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_mean_dtype_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  if (ctx.is_none(1) ? in.dtype != DType::Float : ctx.int_arg(1) != static_cast<int64_t>(DType::Float))
    return Error::KernelFailed;
  return reduce_mean_f32<kSet>(in, out, ReducedDims{}, false);
}

}  // namespace kernels
}  // namespace mcu
