// mcu-gen-kernel: op=aten::clone.out fn=aten_clone_out sig=T?OO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
// out = a copy of self in out's layout (dim_order); memory_format is implied
// by out's dim_order and not read.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_clone_out(const KernelContext& ctx) { return copy_to_layout(ctx.tensor(0), ctx.tensor(2)); }

}  // namespace kernels
}  // namespace mcu
