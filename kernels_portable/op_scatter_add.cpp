// mcu-gen-kernel: op=aten::scatter_add.out fn=aten_scatter_add_out sig=TITTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0 inplace_rule=scatter_self
// aten::scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)
// out = self, then out[i][index[i][j][k]][k] += src[i][j][k] (dim 1) for every
// position of index, in index order (integers wrap, bools or). Shape rules and index
// checks: scatter_common.h.
#include "dtype_util.h"
#include "scatter_common.h"

namespace mcu {
namespace kernels {

Error aten_scatter_add_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_scatter_add_out & kAllTypes;
  const TensorRef src = ctx.tensor(3);
  Scatter s;
  if (!s.init(ctx, 4, &src)) return Error::KernelFailed;
  if (src.data == s.out.data && src.numel > 0) return Error::KernelFailed;
  bool ok = false;
  const bool known = dispatch_dtype<kSet>(s.self.dtype, [&](auto tag) {
    using C = decltype(tag);
    s.copy_self();
    C* dst = static_cast<C*>(s.out.data);
    ok = s.for_each([&](int32_t o, int32_t i) {
      dst[o] = wrapping_add(read_element<C>(s.out.data, o), read_element<C>(src.data, i));
    });
  });
  return known && ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
