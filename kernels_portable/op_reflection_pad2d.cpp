// mcu-gen-kernel: op=aten::reflection_pad2d.out fn=aten_reflection_pad2d_out sig=TLOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::reflection_pad2d.out(Tensor self, SymInt[4] padding, *, Tensor(a!) out) -> Tensor(a!)
// F.pad(mode="reflect") of the last 2 dim(s) (shape_common.h: edge_pad).
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_reflection_pad2d_out(const KernelContext& ctx) { return edge_pad(ctx, 2, true); }

}  // namespace kernels
}  // namespace mcu
