// mcu-gen-kernel: op=aten::sort.values_stable fn=aten_sort_values_stable sig=T?IBOOX dtypes=float32,uint8,int8,int16,int32,int64
// aten::sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False, Tensor(a!) values,
//     Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
// torch.sort(stable=True): equal elements keep their order; NaN after every number (first when descending).
// mcu-gen lowers torch.sort(stable=False) to sort.values (capture/decompositions.py), so `stable` is not read:
// this kernel is always stable (a stable order is one std::sort may give). sort_common.h.
#include "sort_common.h"

namespace mcu {
namespace kernels {

Error aten_sort_values_stable(const KernelContext& ctx) {
  return sort_kernel<selected::aten_sort_values_stable & kRealTypes>(ctx, 2, 3, 4, true);
}

}  // namespace kernels
}  // namespace mcu
