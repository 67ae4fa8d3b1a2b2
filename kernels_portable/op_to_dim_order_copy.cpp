// mcu-gen-kernel: op=dim_order_ops::_to_dim_order_copy.out fn=dim_order_ops_to_dim_order_copy_out sig=TBlOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//                                      Tensor(a!) out) -> Tensor(a!)
// ExecuTorch's dim-order form of aten::_to_copy: out = self converted to out's dtype (ATen's
// casts) in out's dim_order (the argument, None = contiguous, must be out's). A change of
// dtype and of layout in one call is refused (KernelFailed): ExecuTorch's exporter emits
// one or the other. non_blocking is ignored.
#include "elementwise_math.h"

namespace mcu {
namespace kernels {

Error dim_order_ops_to_dim_order_copy_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::dim_order_ops_to_dim_order_copy_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (!in.same_shape(out) || !dim_order_matches(ctx, 2, out)) return Error::KernelFailed;
  if (in.dtype == out.dtype) return copy_to_layout(in, out);
  if (!same_dim_order(in, out)) return Error::KernelFailed;
  return map_elementwise<kSet>(out, in.dtype, [](auto x) { return x; }, in);
}

}  // namespace kernels
}  // namespace mcu
