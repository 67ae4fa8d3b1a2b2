// mcu-gen-kernel: op=dim_order_ops::_clone_dim_order.out fn=dim_order_ops_clone_dim_order_out sig=TBlOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//                                    Tensor(a!) out) -> Tensor(a!)
// ExecuTorch's dim-order form of aten::clone: out = a copy of self in out's dim_order, e.g.
// channels-last (0,2,3,1) to contiguous (0,1,2,3) in front of a flatten. dim_order, when given,
// must be out's dim_order; None means contiguous. non_blocking is ignored.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error dim_order_ops_clone_dim_order_out(const KernelContext& ctx) {
  const TensorRef out = ctx.tensor(3);
  if (!dim_order_matches(ctx, 2, out)) return Error::KernelFailed;
  return copy_to_layout(ctx.tensor(0), out);
}

}  // namespace kernels
}  // namespace mcu
