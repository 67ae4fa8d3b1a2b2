// The comparison kernels (eq, ne, lt, le, gt, ge; Tensor and Scalar forms):
// both operands are converted to the dtype ATen promotes them to and compared
// there; out is bool (or any dtype the build selected, as 0 and 1).
#pragma once
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

// Signature TTOO: self, other, out.
template <DTypeSet Selected, typename Cmp>
Error compare_tensors(const KernelContext& ctx, Cmp cmp) {
  constexpr DTypeSet kSet = Selected & kAllTypes;
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  return map_elementwise<kSet>(ctx.tensor(2), result_type(a, b), [cmp](auto x, auto y) { return cmp(x, y); }, a, b);
}

// Signature TSOO: self, other (a Scalar), out.
template <DTypeSet Selected, typename Cmp>
Error compare_scalar(const KernelContext& ctx, Cmp cmp) {
  constexpr DTypeSet kSet = Selected & kAllTypes;
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  return map_elementwise<kSet>(ctx.tensor(2), result_type(a, s), [cmp, s](auto x) {
    return cmp(x, s.as<decltype(x)>());
  }, a);
}

}  // namespace kernels
}  // namespace mcu
