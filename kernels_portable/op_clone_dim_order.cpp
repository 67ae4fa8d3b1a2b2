// mcu-gen-kernel: op=dim_order_ops::_clone_dim_order.out fn=dim_order_ops_clone_dim_order_out sig=TBlOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//                                    Tensor(a!) out) -> Tensor(a!)
// ExecuTorch's dim-order form of aten::clone: out = a copy of self in out's dim_order, e.g.
// channels-last (0,2,3,1) to contiguous (0,1,2,3) in front of a flatten. dim_order, when given,
// must be out's dim_order; None means contiguous. non_blocking is ignored.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {
namespace {

// dim_order argument (None = contiguous) == out's dim_order.
bool dim_order_matches(const KernelContext& ctx, const TensorRef& out) {
  if (ctx.is_none(2)) return out.is_contiguous();
  const IntList order = ctx.int_list(2);
  if (order.size() != out.dim) return false;
  for (int32_t d = 0; d < out.dim; ++d) {
    const int64_t want = out.dim_order == nullptr ? d : out.dim_order[d];
    if (order[d] != want) return false;
  }
  return true;
}

}  // namespace

Error dim_order_ops_clone_dim_order_out(const KernelContext& ctx) {
  const TensorRef out = ctx.tensor(3);
  if (!dim_order_matches(ctx, out)) return Error::KernelFailed;
  return copy_to_layout(ctx.tensor(0), out);
}

}  // namespace kernels
}  // namespace mcu
