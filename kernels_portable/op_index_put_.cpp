// mcu-gen-kernel: op=aten::index_put_ fn=aten_index_put_ sig=OQTBO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)
// In place: self[indices] = values (or += with accumulate), as index_put.out with out = self
// (advanced_index.h: put_indexed). ExecuTorch's programs may call it on a mutable buffer;
// mcu-gen's own export emits index_put.out.
#include "advanced_index.h"
#include "dtype_util.h"

namespace mcu {
namespace kernels {

Error aten_index_put_(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_index_put_ & kAllTypes;
  const TensorRef self = ctx.tensor(0);
  return put_indexed<kSet>(ctx, self, 1, ctx.tensor(2), ctx.bool_arg(3), self);
}

}  // namespace kernels
}  // namespace mcu
