// mcu-gen-kernel: op=aten::cummax.out fn=aten_cummax_out sig=TIOOX dtypes=float32,uint8,int8,int16,int32,int64,bool index_outputs=3
// aten::cummax.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices)
//     -> (Tensor(a!) values, Tensor(b!) indices)
// Running maximum along dim and its int64 index (the later one on ties; NaN
// propagates with the latest NaN's index), as ATen: scan_common.h.
#include "scan_common.h"

namespace mcu {
namespace kernels {

Error aten_cummax_out(const KernelContext& ctx) {
  return cumulative_extreme<selected::aten_cummax_out & kAllTypes, true>(ctx);
}

}  // namespace kernels
}  // namespace mcu
