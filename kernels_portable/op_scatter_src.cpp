// mcu-gen-kernel: op=aten::scatter.src_out fn=aten_scatter_src_out sig=TITTOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0 inplace_rule=scatter_self
// aten::scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)
// out = self, then out[i][index[i][j][k]][k] = src[i][j][k] (dim 1) for every
// position of index; a position written twice keeps the later one (ATen's CPU
// order). Shape rules and index checks: scatter_common.h.
#include "scatter_common.h"

namespace mcu {
namespace kernels {

Error aten_scatter_src_out(const KernelContext& ctx) {
  const TensorRef src = ctx.tensor(3);
  Scatter s;
  if (!s.init(ctx, 4, &src)) return Error::KernelFailed;
  if (src.data == s.out.data && src.numel > 0) return Error::KernelFailed;
  s.copy_self();
  const size_t es = element_size(s.self);
  uint8_t* dst = static_cast<uint8_t*>(s.out.data);
  const uint8_t* from = static_cast<const uint8_t*>(src.data);
  const bool ok = s.for_each([&](int32_t o, int32_t i) {
    memcpy(dst + static_cast<size_t>(o) * es, from + static_cast<size_t>(i) * es, es);
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
