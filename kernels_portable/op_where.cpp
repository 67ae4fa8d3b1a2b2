// mcu-gen-kernel: op=aten::where.self_out fn=aten_where_self_out sig=TTTOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// out = condition ? self : other, the three broadcast together; out has the
// dtype self and other promote to.
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_where_self_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_where_self_out & kAllTypes;
  const TensorRef cond = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (cond.dtype != DType::Bool && cond.dtype != DType::UInt8) return Error::KernelFailed;
  // The condition converts to the compute type as 0 or 1: test it against zero.
  return map_elementwise<kSet>(out, out.dtype, [](auto c, auto x, auto y) { return c != decltype(c)(0) ? x : y; },
                               cond, ctx.tensor(1), ctx.tensor(2));
}

}  // namespace kernels
}  // namespace mcu
