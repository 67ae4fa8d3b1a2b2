// mcu-gen-kernel: op=aten::median.dim_values fn=aten_median_dim_values sig=TIBOOX dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=4
// aten::median.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices)
//     -> (Tensor(a!) values, Tensor(b!) indices)
// The lower median along dim and its int64 index, as ATen's CPU kernel: a slice with a NaN gives its first NaN;
// else the element at position (n - 1) / 2 when the slice is ordered by value, equal values by index (so of
// equal medians, ATen's std::nth_element with that comparison returns this one). No scratch, any slice length.
// The body, shared with nanmedian.dim, is select_common.h's median_dim_kernel.
#include "select_common.h"

namespace mcu {
namespace kernels {

Error aten_median_dim_values(const KernelContext& ctx) {
  return median_dim_kernel<selected::aten_median_dim_values>(ctx, /*ignore_nan=*/false);
}

}  // namespace kernels
}  // namespace mcu
