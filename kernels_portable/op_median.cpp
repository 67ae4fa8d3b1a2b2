// mcu-gen-kernel: op=aten::median.out fn=aten_median_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64
// aten::median.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// The lower median of all elements (the one at position (numel - 1) / 2 in sorted order) as a 0-dim tensor;
// NaN if there is a NaN (ATen). The body, shared with nanmedian, is select_common.h's median_kernel.
#include "select_common.h"

namespace mcu {
namespace kernels {

Error aten_median_out(const KernelContext& ctx) {
  return median_kernel<selected::aten_median_out>(ctx, /*ignore_nan=*/false);
}

}  // namespace kernels
}  // namespace mcu
