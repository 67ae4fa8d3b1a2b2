// mcu-gen-kernel: op=aten::clamp.out fn=aten_clamp_out sig=TssOO dtypes=float32,uint8,int8,int16,int32,int64 inplace=0
// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out)
// out = min(max(self, min), max); a None bound is not applied. As in ATen,
// min > max gives max everywhere, and NaN stays NaN. Integer tensors are
// clamped in ATen's result type of self and the bounds (int64 indices with
// int bounds stay int64; a float bound computes in float).
#include "elementwise_common.h"
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

namespace {

Error clamp_float(const KernelContext& ctx, const TensorRef& in, const TensorRef& out, bool has_lo, bool has_hi) {
  const float lo = has_lo ? static_cast<float>(ctx.scalar_arg(1)) : 0.0f;
  const float hi = has_hi ? static_cast<float>(ctx.scalar_arg(2)) : 0.0f;
  if (has_lo && has_hi) {
    return unary_float(in, out, [lo, hi](float x) {
      const float y = x < lo ? lo : x;
      return y > hi ? hi : y;
    });
  }
  if (has_lo) return unary_float(in, out, [lo](float x) { return x < lo ? lo : x; });
  if (has_hi) return unary_float(in, out, [hi](float x) { return x > hi ? hi : x; });
  return unary_float(in, out, [](float x) { return x; });
}

}  // namespace

Error aten_clamp_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_clamp_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  const bool has_lo = !ctx.is_none(1);
  const bool has_hi = !ctx.is_none(2);
  // A float-only program compiles the float loop alone.
  if (kSet == kFloatTypes || (is_float(in) && is_float(out))) return clamp_float(ctx, in, out, has_lo, has_hi);
  if constexpr (kSet != kFloatTypes) {
    const Scalar lo = has_lo ? ctx.scalar(1) : Scalar{};
    const Scalar hi = has_hi ? ctx.scalar(2) : Scalar{};
    ResultType r;
    r.add_tensor(in);
    if (has_lo) r.add_scalar(lo);
    if (has_hi) r.add_scalar(hi);
    return map_elementwise<kSet>(out, r.get(), [lo, hi, has_lo, has_hi](auto x) {
      using C = decltype(x);
      C y = x;
      if (has_lo && y < scalar_as<C>(lo)) y = scalar_as<C>(lo);
      if (has_hi && y > scalar_as<C>(hi)) y = scalar_as<C>(hi);
      return y;
    }, in);
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
