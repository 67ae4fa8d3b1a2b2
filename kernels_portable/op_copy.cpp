// mcu-gen-kernel: op=aten::copy.out fn=aten_copy_out sig=TTBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out) -> Tensor(a!)
// out = src broadcast to self's shape and converted to self's dtype (what an in-place
// `x[...] = v` / fill_ becomes once functionalized); self's values are not read.
#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

Error aten_copy_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_copy_out & kAllTypes;
  const TensorRef self = ctx.tensor(0);
  const TensorRef src = ctx.tensor(1);
  const TensorRef out = ctx.tensor(3);
  if (!out.same_shape(self) || out.dtype != self.dtype) return Error::KernelFailed;
  // self takes part only for its shape: the broadcast of (self, src) must be out's shape.
  return map_elementwise<kSet>(out, out.dtype, [](auto, auto x) { return x; }, self, src);
}

}  // namespace kernels
}  // namespace mcu
