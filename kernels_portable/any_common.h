// any.out / any.dims_out / any.all_out: true where some reduced element is
// non-zero (NaN counts as non-zero); out is bool (or uint8, as 0 and 1).
#pragma once
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

template <DTypeSet Selected>
Error reduce_any(const TensorRef& in, const ReducedDims& dims, bool keepdim, const TensorRef& out) {
  constexpr DTypeSet kSet = Selected & kAllTypes;
  if (out.dtype != DType::Bool && out.dtype != DType::UInt8) return Error::KernelFailed;
  Reduction r;
  if (!r.init(in, dims) || !r.matches(out, keepdim)) return Error::KernelFailed;
  uint8_t* y = static_cast<uint8_t*>(out.data);
  const bool ok = dispatch_dtype<kSet>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    r.for_each_output([&](int32_t o, int32_t base) {
      bool any = false;
      r.for_each_reduced(base, [&](int32_t offset, int32_t) { any = any || read_element<C>(in.data, offset) != C(0); });
      y[o] = any ? 1 : 0;
    });
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
