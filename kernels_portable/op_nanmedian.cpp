// mcu-gen-kernel: op=aten::nanmedian.out fn=aten_nanmedian_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64
// aten::nanmedian.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// The lower median of the elements that are not NaN, as a 0-dim tensor; NaN when all are (ATen). The body,
// shared with median, is select_common.h's median_kernel.
#include "select_common.h"

namespace mcu {
namespace kernels {

Error aten_nanmedian_out(const KernelContext& ctx) {
  return median_kernel<selected::aten_nanmedian_out>(ctx, /*ignore_nan=*/true);
}

}  // namespace kernels
}  // namespace mcu
