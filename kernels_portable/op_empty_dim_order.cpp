// mcu-gen-kernel: op=dim_order_ops::_empty_dim_order.out fn=dim_order_ops_empty_dim_order_out sig=LlOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// dim_order_ops::_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)
// ExecuTorch's dim-order form of aten::empty: out's storage, contents unspecified (nothing is
// written); size must be out's shape and dim_order (None = contiguous) out's dim order.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error dim_order_ops_empty_dim_order_out(const KernelContext& ctx) {
  const IntList size = ctx.int_list(0);
  const TensorRef out = ctx.tensor(2);
  if (size.size() != out.dim || !dim_order_matches(ctx, 1, out)) return Error::KernelFailed;
  for (int32_t d = 0; d < out.dim; ++d) {
    if (size[d] != out.sizes[d]) return Error::KernelFailed;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
