// mcu-gen-kernel: op=aten::reflection_pad3d.out fn=aten_reflection_pad3d_out sig=TLOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::reflection_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out) -> Tensor(a!)
// F.pad(mode="reflect") of the last 3 dims of (C, D, H, W) or (N, C, D, H, W) (shape_common.h: edge_pad).
#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_reflection_pad3d_out(const KernelContext& ctx) { return edge_pad(ctx, 3, true); }

}  // namespace kernels
}  // namespace mcu
