// mcu-gen-kernel: op=aten::sum.IntList_out fn=aten_sum_intlist_out sig=TlBiOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None,
//     Tensor(a!) out) -> Tensor(a!)
// Sums over `dim` (None or []: all dims), accumulating in out's dtype (int64
// for integer and bool inputs unless `dtype` says otherwise, as in ATen).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

Error aten_sum_intlist_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_sum_intlist_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(4);
  if (!ctx.is_none(3) && ctx.int_arg(3) != static_cast<int64_t>(out.dtype)) return Error::KernelFailed;
  Reduction r;
  if (!r.init(in, reduced_dims(ctx, 1, in.dim)) || !r.matches(out, ctx.bool_arg(2))) return Error::KernelFailed;
  bool ok = false;
  dispatch_dtype<kSet & kRealTypes>(out.dtype, [&](auto acc_tag) {
    using Acc = decltype(acc_tag);
    const LoadFn<Acc> load = loader<kSet, Acc>(in.dtype);
    if (load == nullptr) return;
    Acc* y = static_cast<Acc*>(out.data);
    r.for_each_output([&](int32_t o, int32_t base) {
      Acc s = Acc(0);
      r.for_each_reduced(base, [&](int32_t offset, int32_t) { s = wrapping_add(s, load(in.data, offset)); });
      y[o] = s;
    });
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
