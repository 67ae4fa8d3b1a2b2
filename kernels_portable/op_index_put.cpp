// mcu-gen-kernel: op=aten::index_put.out fn=aten_index_put_out sig=TQTBOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, *, Tensor(a!) out) -> Tensor(a!)
// out = self, then out[indices] = values (or += with accumulate: every
// occurrence of a repeated index adds; bool adds as `or`, integers wrap).
// Advanced indexing as aten::index.Tensor (advanced_index.h: int32/int64 index
// tensors, None, bool masks); values (self's dtype) broadcast to the shape
// self[indices] has. Every index is checked (out of range: the call fails).
// In place (out over self) is fine: self is copied first, then only out is read.
#include "advanced_index.h"
#include "dtype_util.h"

namespace mcu {
namespace kernels {

Error aten_index_put_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_index_put_out & kAllTypes;
  return put_indexed<kSet>(ctx, ctx.tensor(0), 1, ctx.tensor(2), ctx.bool_arg(3), ctx.tensor(4));
}

}  // namespace kernels
}  // namespace mcu
