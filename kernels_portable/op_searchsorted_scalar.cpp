// mcu-gen-kernel: op=aten::searchsorted.Scalar_out fn=aten_searchsorted_scalar_out sig=TSBBztOO dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=5,6
// aten::searchsorted.Scalar_out(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False,
//     str? side=None, Tensor? sorter=None, Tensor(a!) out) -> Tensor(a!)
// out (0-d) = where the Scalar self goes in the 1-d sorted_sequence: the first position whose value is >= self
// (right, or side="right": > self), its length when there is none and for NaN; `sorter` orders an unsorted
// sequence. They compare in the promoted dtype; out is int64, or int32 (out_int32).
#include "elementwise_engine.h"
#include "search_common.h"

namespace mcu {
namespace kernels {

Error aten_searchsorted_scalar_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_searchsorted_scalar_out & kRealTypes;
  SearchArgs args;
  if (!args.init(ctx, 2) || args.sequence.dim != 1 || args.out.numel != 1) return Error::KernelFailed;
  const Scalar value = ctx.scalar(1);
  bool ok = false;
  dispatch_dtype<kSet>(result_type(args.sequence, value), [&](auto tag) {
    using C = decltype(tag);
    const LoadFn<C> load_seq = loader<kSet, C>(args.sequence.dtype);
    if (load_seq == nullptr) return;
    store_position(args.out, 0, args.position<C>(scalar_as<C>(value), load_seq, 0));
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
