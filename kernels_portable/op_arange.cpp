// mcu-gen-kernel: op=aten::arange.out fn=aten_arange_out sig=SOO dtypes=float32,uint8,int8,int16,int32,int64
// aten::arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)
// out[i] = i for out's numel elements (= ceil(end), checked).
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_arange_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_arange_out & kRealTypes;
  const double end = ctx.scalar(0).as<double>();
  const TensorRef out = ctx.tensor(1);
  if (out.dim != 1 || !out.is_contiguous() || end < 0.0) return Error::KernelFailed;
  if (ceil(end) != static_cast<double>(out.numel)) return Error::KernelFailed;
  const bool ok = dispatch_dtype<kSet>(out.dtype, [&](auto tag) {
    using C = decltype(tag);
    C* p = static_cast<C*>(out.data);
    for (int32_t i = 0; i < out.numel; ++i) p[i] = static_cast<C>(i);
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
