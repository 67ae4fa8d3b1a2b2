// mcu-gen-kernel: op=aten::cumsum.out fn=aten_cumsum_out sig=TIiOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// Running sum along dim in out's dtype (int64 for integer and bool inputs
// unless `dtype` says otherwise, as in ATen); integer sums wrap.
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_cumsum_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_cumsum_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (!ctx.is_none(2) && ctx.int_arg(2) != static_cast<int64_t>(out.dtype)) return Error::KernelFailed;
  if (!out.is_contiguous() || out.dim != in.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (out.sizes[d] != in.sizes[d]) return Error::KernelFailed;
  }
  Reduction r;
  if (!r.init(in, reduced_dim(ctx, 1, in.dim))) return Error::KernelFailed;
  bool ok = false;
  dispatch_dtype<kSet & kRealTypes>(out.dtype, [&](auto acc_tag) {
    using Acc = decltype(acc_tag);
    const LoadFn<Acc> load = loader<kSet, Acc>(in.dtype);
    if (load == nullptr) return;
    Acc* y = static_cast<Acc*>(out.data);
    // Both tensors are contiguous with the same shape: an input offset is the output offset.
    r.for_each_output([&](int32_t, int32_t base) {
      Acc s = Acc(0);
      r.for_each_reduced(base, [&](int32_t offset, int32_t) {
        s = wrapping_add(s, load(in.data, offset));
        y[offset] = s;
      });
    });
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
