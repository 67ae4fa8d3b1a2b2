// mcu-gen-kernel: op=aten::arange.start_out fn=aten_arange_start_out sig=SSSOO dtypes=float32,uint8,int8,int16,int32,int64
// aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)
// out[i] = start + i * step for out's numel elements (out's size was computed at export
// time from start, end and step; the kernel checks it).
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_arange_start_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_arange_start_out & kRealTypes;
  const Scalar start = ctx.scalar(0);
  const Scalar end = ctx.scalar(1);
  const Scalar step = ctx.scalar(2);
  const TensorRef out = ctx.tensor(3);
  if (out.dim != 1 || !out.is_contiguous()) return Error::KernelFailed;
  const double s0 = start.as<double>(), s1 = end.as<double>(), st = step.as<double>();
  if (st == 0.0 || (st > 0.0 && s1 < s0) || (st < 0.0 && s1 > s0)) return Error::KernelFailed;
  const double count = ceil((s1 - s0) / st);
  if (count != static_cast<double>(out.numel)) return Error::KernelFailed;
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const bool ok = dispatch_dtype<kSet>(out.dtype, [&](auto tag) {
    using C = decltype(tag);
    C* p = static_cast<C*>(out.data);
    if (integral) {
      const int64_t a = start.as<int64_t>(), b = step.as<int64_t>();
      for (int32_t i = 0; i < out.numel; ++i) p[i] = static_cast<C>(a + b * i);
    } else {
      for (int32_t i = 0; i < out.numel; ++i) p[i] = convert<C>(static_cast<float>(s0 + st * i));
    }
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
