// mcu-gen-kernel: op=aten::amin.out fn=aten_amin_out sig=TLBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// The smallest element over `dim` ([]: all dims), in self's dtype; NaN wins
// (ATen propagates it). An empty reduction is an error, as in ATen.
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_amin_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_amin_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (in.dtype != out.dtype) return Error::KernelFailed;
  Reduction r;
  if (!r.init(in, reduced_dims(ctx, 1, in.dim)) || !r.matches(out, ctx.bool_arg(2))) return Error::KernelFailed;
  if (r.count() == 0 && r.out_numel() > 0) return Error::KernelFailed;
  const bool ok = dispatch_dtype<kSet>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    const C* x = static_cast<const C*>(in.data);
    C* y = static_cast<C*>(out.data);
    r.for_each_output([&](int32_t o, int32_t base) {
      C m = x[base];
      r.for_each_reduced(base, [&](int32_t offset, int32_t) {
        const C v = x[offset];
        if (v < m || v != v) m = (m != m) ? m : v;  // NaN (v != v) sticks once seen
      });
      y[o] = m;
    });
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
