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
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (in.dtype != out.dtype || !in.same_shape(out) || element_size(in) == 0) return Error::KernelFailed;
  if (!dim_order_matches(ctx, out)) return Error::KernelFailed;
  if (same_dim_order(in, out)) {
    move_bytes(out.data, in.data, out.nbytes());
    return Error::Ok;
  }
  // A layout change cannot be done in place.
  if (in.data == out.data && in.numel > 1) return Error::KernelFailed;
  int32_t in_strides[kMaxDims];
  int32_t out_strides[kMaxDims];
  layout_strides(in, in_strides);
  layout_strides(out, out_strides);
  strided_copy(out.data, out_strides, in.data, in_strides, out.sizes, out.dim, element_size(in));
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
