// mcu-gen-kernel: op=aten::nanmedian.dim_values fn=aten_nanmedian_dim_values sig=TIBOOX dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=4
// aten::nanmedian.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices)
//     -> (Tensor(a!) values, Tensor(b!) indices)
// The lower median along dim of the elements that are not NaN, and its int64 index, as ATen's CPU kernel: the
// element at position (numbers - 1) / 2 of the slice's numbers ordered by value, equal values by index. An
// all-NaN slice gives NaN and the index ATen's std::nth_element leaves in front among elements its comparison
// holds equal, which depends on the slice's length alone (select_common.h's nth_element_front_of_equals, exact
// for every length). No scratch. The body, shared with median.dim, is select_common.h's median_dim_kernel.
#include "select_common.h"

namespace mcu {
namespace kernels {

Error aten_nanmedian_dim_values(const KernelContext& ctx) {
  return median_dim_kernel<selected::aten_nanmedian_dim_values>(ctx, /*ignore_nan=*/true);
}

}  // namespace kernels
}  // namespace mcu
