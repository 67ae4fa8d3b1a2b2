// mcu-gen-kernel: op=aten::fill.Tensor_out fn=aten_fill_tensor_out sig=TTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out) -> Tensor(a!)
// out (self's shape) = value (a 0-dim or one-element tensor) everywhere.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error aten_fill_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_fill_tensor_out & kAllTypes;
  const TensorRef value = ctx.tensor(1);
  const TensorRef out = ctx.tensor(2);
  if (value.numel != 1 || value.dim > 1 || !ctx.tensor(0).same_shape(out)) return Error::KernelFailed;
  bool ok = false;  // value's dtype is one this build has
  dispatch_dtype<kSet>(out.dtype, [&](auto tag) {
    using C = decltype(tag);
    const LoadFn<C> load = loader<kSet, C>(value.dtype);
    if (load == nullptr) return;
    const C v = load(value.data, 0);
    C* p = static_cast<C*>(out.data);
    for (int32_t i = 0; i < out.numel; ++i) p[i] = v;
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
