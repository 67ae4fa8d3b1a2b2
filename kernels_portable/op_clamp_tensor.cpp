// mcu-gen-kernel: op=aten::clamp.Tensor_out fn=aten_clamp_tensor_out sig=TttOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)
// out = min(max(self, min), max), the three broadcast and promoted; NaN in any gives NaN (ATen).
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_clamp_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_clamp_tensor_out & kAllTypes;
  const TensorRef x = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  const bool has_lo = !ctx.is_none(1);
  const bool has_hi = !ctx.is_none(2);
  ResultType r;
  r.add_tensor(x);
  if (has_lo) r.add_tensor(ctx.tensor(1));
  if (has_hi) r.add_tensor(ctx.tensor(2));
  const DType compute = r.get();
  if (has_lo && has_hi) {
    return map_elementwise<kSet>(out, compute, [](auto v, auto lo, auto hi) {
      return minimum_of(maximum_of(v, lo), hi);
    }, x, ctx.tensor(1), ctx.tensor(2));
  }
  if (has_lo) return map_elementwise<kSet>(out, compute, [](auto v, auto lo) { return maximum_of(v, lo); }, x, ctx.tensor(1));
  if (has_hi) return map_elementwise<kSet>(out, compute, [](auto v, auto hi) { return minimum_of(v, hi); }, x, ctx.tensor(2));
  return Error::KernelFailed;  // ATen: at least one of min and max
}

}  // namespace kernels
}  // namespace mcu
