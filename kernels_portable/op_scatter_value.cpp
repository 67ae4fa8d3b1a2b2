// mcu-gen-kernel: op=aten::scatter.value_out fn=aten_scatter_value_out sig=TITSOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0 inplace_rule=scatter_self
// aten::scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out) -> Tensor(a!)
// out = self, then out[i][index[i][j][k]][k] = value (dim 1) for every position
// of index; value converted to self's dtype. Shape rules and index checks:
// scatter_common.h.
#include "dtype_util.h"
#include "scatter_common.h"

namespace mcu {
namespace kernels {

Error aten_scatter_value_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_scatter_value_out & kAllTypes;
  const Scalar value = ctx.scalar(3);
  Scatter s;
  if (!s.init(ctx, 4, nullptr)) return Error::KernelFailed;
  bool ok = false;
  const bool known = dispatch_dtype<kSet>(s.self.dtype, [&](auto tag) {
    using C = decltype(tag);
    s.copy_self();
    const C v = scalar_as<C>(value);
    C* dst = static_cast<C*>(s.out.data);
    ok = s.for_each([&](int32_t o, int32_t) { dst[o] = v; });
  });
  return known && ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
