// The comparison kernels (eq, ne, lt, le, gt, ge; Tensor and Scalar forms):
// both operands are converted to the dtype ATen promotes them to and compared
// there; out is bool (or any dtype the build selected, as 0 and 1). Also the
// logical_* (truth values) and bitwise_* (integral and bool) binary kernels.
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

// Signature TTOO: self, other, out. Both operands are read as truth values (not
// zero, NaN included, as ATen); out is bool or any selected dtype (0 and 1).
template <DTypeSet Selected, typename Op>
Error logical_tensors(const KernelContext& ctx, Op op) {
  constexpr DTypeSet kSet = (Selected | dtype_bit(DType::Bool)) & kAllTypes;
  return map_elementwise<kSet>(ctx.tensor(2), DType::Bool, [op](bool x, bool y) { return op(x, y); }, ctx.tensor(0),
                               ctx.tensor(1));
}

// The bitwise kernels: integer and bool operands only (ATen rejects floats).
inline bool bitwise_dtype(DType t) { return t == DType::Bool || is_integral(t); }

template <typename C>
C shift_left(C a, C b) {
  // ATen: a shift by a negative amount or by the width or more gives 0.
  using U = typename Unsigned<C>::type;
  constexpr int64_t bits = sizeof(C) * 8;
  if (static_cast<int64_t>(b) < 0 || static_cast<int64_t>(b) >= bits) return C(0);
  return static_cast<C>(static_cast<U>(static_cast<U>(a) << static_cast<int32_t>(b)));
}
template <typename C>
C shift_right(C a, C b) {
  // ATen: beyond the width (or negative), the sign fills every bit.
  constexpr int64_t bits = sizeof(C) * 8;
  if (static_cast<int64_t>(b) < 0 || static_cast<int64_t>(b) >= bits) return static_cast<C>(a >> (bits - 1));
  return static_cast<C>(a >> static_cast<int32_t>(b));
}

// Signature TTOO: out = op(self, other) in the promoted integral dtype.
template <DTypeSet Selected, typename Op>
Error bitwise_tensors(const KernelContext& ctx, Op op) {
  constexpr DTypeSet kSet = Selected & (kIntTypes | dtype_bit(DType::Bool));
  const TensorRef a = ctx.tensor(0);
  const TensorRef b = ctx.tensor(1);
  const DType compute = result_type(a, b);
  if (!bitwise_dtype(compute) || !bitwise_dtype(ctx.tensor(2).dtype)) return Error::KernelFailed;
  return map_elementwise<kSet>(ctx.tensor(2), compute, [op](auto x, auto y) {
    using C = decltype(x);
    return static_cast<C>(op(x, y));
  }, a, b);
}

// Signature TSOO: out = op(self, other) with an Int or Bool Scalar.
template <DTypeSet Selected, typename Op>
Error bitwise_scalar(const KernelContext& ctx, Op op) {
  constexpr DTypeSet kSet = Selected & (kIntTypes | dtype_bit(DType::Bool));
  const TensorRef a = ctx.tensor(0);
  const Scalar s = ctx.scalar(1);
  const DType compute = result_type(a, s);
  if (s.is_floating() || !bitwise_dtype(compute) || !bitwise_dtype(ctx.tensor(2).dtype)) return Error::KernelFailed;
  return map_elementwise<kSet>(ctx.tensor(2), compute, [op, s](auto x) {
    using C = decltype(x);
    return static_cast<C>(op(x, s.as<C>()));
  }, a);
}

}  // namespace kernels
}  // namespace mcu
