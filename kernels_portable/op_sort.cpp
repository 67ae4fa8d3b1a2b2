// mcu-gen-kernel: op=aten::sort.values fn=aten_sort_values sig=TIBOOX dtypes=float32,uint8,int8,int16,int32,int64
// aten::sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, Tensor(b!) indices)
//     -> (Tensor(a!) values, Tensor(b!) indices)
// self sorted along dim and the int64 indices of its elements, in ATen's CPU order: std::sort's (libstdc++'s
// introsort: equal elements keep their order in slices of up to 16, not beyond), NaN after every number
// (first when descending). sort_common.h.
#include "sort_common.h"

namespace mcu {
namespace kernels {

Error aten_sort_values(const KernelContext& ctx) {
  return sort_kernel<selected::aten_sort_values & kRealTypes>(ctx, 1, 2, 3, false);
}

}  // namespace kernels
}  // namespace mcu
