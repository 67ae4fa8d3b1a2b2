// mcu-gen-kernel: op=aten::copy_ fn=aten_copy_ sig=OTBO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
// self = src, same shape and dtype (no broadcasting). ExecuTorch's emitter writes a mutable
// buffer's new value with it at the end of a method (arguments self, src, non_blocking and the
// returned self); mcu-gen's own programs write state with the producer or aten::clone.out.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_copy_(const KernelContext& ctx) { return copy_to_layout(ctx.tensor(1), ctx.tensor(0)); }

}  // namespace kernels
}  // namespace mcu
