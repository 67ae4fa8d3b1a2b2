// mcu-gen-kernel: op=aten::searchsorted.Tensor_out fn=aten_searchsorted_tensor_out sig=TTBBztOO dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=5,6
// aten::searchsorted.Tensor_out(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False,
//     str? side=None, Tensor? sorter=None, Tensor(a!) out) -> Tensor(a!)
// out[i] = where self[i] goes in its row of sorted_sequence to keep the row sorted: the first position whose value
// is >= self[i] (right, or side="right": > self[i]), the row's length when there is none and for NaN.
// sorted_sequence is 1-d (one row for all of self) or has self's leading dims (a row for each row of self);
// `sorter` (int64, its shape) orders an unsorted sequence. Values compare in the promoted dtype; out is int64,
// or int32 (out_int32).
#include "search_common.h"

namespace mcu {
namespace kernels {

Error aten_searchsorted_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_searchsorted_tensor_out & kRealTypes;
  SearchArgs args;
  const TensorRef in = ctx.tensor(1);
  if (!args.init(ctx, 2) || !in.same_shape(args.out) || !in.is_contiguous()) return Error::KernelFailed;
  const TensorRef& seq = args.sequence;
  const bool one_row = seq.dim == 1;
  if (!one_row) {  // a row per row of self: the same leading dims
    if (seq.dim != in.dim) return Error::KernelFailed;
    for (int32_t d = 0; d + 1 < in.dim; ++d) {
      if (seq.sizes[d] != in.sizes[d]) return Error::KernelFailed;
    }
  }
  const int32_t per_row = in.dim > 0 ? in.sizes[in.dim - 1] : 1;
  bool ok = false;
  dispatch_dtype<kSet>(promote_types(seq.dtype, in.dtype), [&](auto tag) {
    using C = decltype(tag);
    const LoadFn<C> load_in = loader<kSet, C>(in.dtype);
    const LoadFn<C> load_seq = loader<kSet, C>(seq.dtype);
    if (load_in == nullptr || load_seq == nullptr) return;
    for (int32_t i = 0; i < in.numel; ++i) {
      store_position(args.out, i, args.position<C>(load_in(in.data, i), load_seq, one_row ? 0 : i / per_row));
    }
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
